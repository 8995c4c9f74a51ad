package storetest_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
)

// testFollowUps: a publish while a scan is in flight is never lost (issue 43). A queued scan
// covers it; a running one gets one follow-up job per site, which every later publish joins,
// even 20 at once; once that job has run, the next publish queues a new one.
func testFollowUps(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	enqueue(t, s, site, t0)
	did, err := s.EnqueueFollowUp(ctx, site.ID, t0)
	must(t, err)
	if did != store.FollowUpCovered {
		t.Fatalf("publish with a queued scan: %q, want covered", did)
	}
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 1, t0))

	var wg sync.WaitGroup
	got := make(chan store.FollowUp, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			did, err := s.EnqueueFollowUp(ctx, site.ID, t0)
			if err != nil {
				t.Error(err)
			}
			got <- did
		}()
	}
	wg.Wait()
	close(got)
	count := map[store.FollowUp]int{}
	for did := range got {
		count[did]++
	}
	if count[store.FollowUpQueued] != 1 || count[store.FollowUpJoined] != 19 {
		t.Fatalf("20 publishes during a running scan: %v, want 1 queued and 19 joined", count)
	}
	f, err := s.ClaimJob(ctx, store.KindFollowUp, "w", t0, 0)
	must(t, err)
	var args store.FollowUpJob
	if err := json.Unmarshal(f.Args, &args); err != nil || args.SiteID != site.ID || f.WorkspaceID == "" || f.WorkspaceID != args.WorkspaceID {
		t.Fatalf("follow-up job %+v (%s), want one of the site and its workspace", f, f.Args)
	}
	if _, err := s.ClaimJob(ctx, store.KindFollowUp, "w", t0, 0); err == nil {
		t.Fatal("a second follow-up job was waiting")
	}
	// While the follow-up runs, a publish queues the next one: the one running may have enqueued
	// its scan already.
	did, err = s.EnqueueFollowUp(ctx, site.ID, t0.Add(time.Second))
	must(t, err)
	if did != store.FollowUpQueued {
		t.Fatalf("publish while the follow-up runs: %q, want queued", did)
	}
	_, err = s.EnqueueFollowUp(ctx, store.NewID(), t0)
	wantErr(t, err, store.ErrNotFound)
}
