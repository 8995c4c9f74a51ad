package storetest_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// testScanPagesInJob: a scan started with pages of its own (a CI pipeline's request) carries
// them in its job, where the pipeline reads them; the scan itself does not keep them.
func testScanPagesInJob(t *testing.T, s store.Store) {
	u := newUser(t, s, "ci@example.com")
	site := newSite(t, s, u, "Shop")
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyMobile, Trigger: store.TriggerAPI, CreatedAt: t0,
		Pages: []string{"/pricing", "/"}}
	must(t, s.EnqueueScan(ctx, sc, store.KindScan, t0))
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	var args store.ScanJob
	must(t, json.Unmarshal(j.Args, &args))
	if want := (store.ScanJob{ScanID: sc.ID, Pages: []string{"/pricing", "/"}}); !reflect.DeepEqual(args, want) {
		t.Errorf("job args = %+v, want %+v", args, want)
	}
	got, err := s.Scan(ctx, u.ID, sc.ID)
	must(t, err)
	if got.Pages != nil || got.Trigger != store.TriggerAPI || got.Strategy != store.StrategyMobile {
		t.Errorf("scan read back = pages %v trigger %q strategy %q", got.Pages, got.Trigger, got.Strategy)
	}
	// A scan started without pages has none in its job: the pipeline audits the site's.
	other := newSite(t, s, u, "Blog")
	plain := enqueue(t, s, other, t0)
	j, err = s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	var raw map[string]any
	must(t, json.Unmarshal(j.Args, &raw))
	if j.ScanID != plain.ID || !reflect.DeepEqual(raw, map[string]any{"scanId": plain.ID}) {
		t.Errorf("job of a plain scan = %s %s", j.ScanID, j.Args)
	}
}

// testScansByID: the waiters' read gives scans of every status by id in one call, and skips
// unknown ids and ids that are not uuids.
func testScansByID(t *testing.T, s store.Store) {
	u := newUser(t, s, "w@example.com")
	done := completedScan(t, s, newSite(t, s, u, "Done"), t0, 80)
	queued := enqueue(t, s, newSite(t, s, u, "Queued"), t0)
	got, err := s.ScansByID(ctx, []string{done.ID, queued.ID, store.NewID(), "not-a-uuid"})
	must(t, err)
	if len(got) != 2 || got[done.ID].Status != store.StatusComplete || got[queued.ID].Status != store.StatusQueued ||
		got[done.ID].CompletedAt == nil || got[done.ID].SiteID != done.SiteID {
		t.Errorf("scans by id = %+v", got)
	}
	if got, err := s.ScansByID(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("no ids: %v %v", got, err)
	}
}

// TestWakeOnJobs: both stores announce every enqueue, so what waits for a scan to finish (the
// budget check's waiters) wakes when its follow-up jobs are enqueued, in any process.
func TestWakeOnJobs(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)
			w, ok := s.(store.JobWaker)
			if !ok {
				t.Fatalf("%s store is not a store.JobWaker", b.Name)
			}
			lctx, cancel := context.WithCancel(ctx)
			defer cancel()
			wake, err := w.WakeOnJobs(lctx, nil)
			must(t, err)
			// A listener may send once on (re)connecting: start from quiet.
			drain := func() {
				for {
					select {
					case <-wake:
					case <-time.After(50 * time.Millisecond):
						return
					}
				}
			}
			drain()
			u := newUser(t, s, "wake@example.com")
			site := newSite(t, s, u, "Wake")
			sc := enqueue(t, s, site, t0)
			waitWake(t, wake, "the scan's enqueue")
			drain()
			j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
			must(t, err)
			must(t, s.FailScan(ctx, j.Lease(), "broken", t0)) // its alerts job is enqueued
			waitWake(t, wake, "the failed scan's alerts job")
			if got, _ := s.ScansByID(ctx, []string{sc.ID}); got[sc.ID].Status != store.StatusFailed {
				t.Errorf("scan = %+v", got[sc.ID])
			}
		})
	}
}

func waitWake(t *testing.T, wake <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-wake:
	case <-time.After(storetest.Timeout()):
		t.Fatalf("no wake-up after %s", what)
	}
}
