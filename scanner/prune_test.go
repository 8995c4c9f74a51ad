package scanner

import (
	"context"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
)

// The prune job, enqueued by the store at most once however often it is asked, removes the page
// details older than the workspace's retention on the fake clock, keeping the latest two
// completed scans and every summary.
func TestPruneJob(t *testing.T) {
	onStores(t, storeTest{name: "prune job", fn: func(t *testing.T, st store.Store) {
		ctx := context.Background()
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := scantest.NewClock(start)
		u := store.User{ID: store.NewID(), Email: "p@example.com", PasswordHash: "x", CreatedAt: start}
		site := store.Site{ID: store.NewID(), UserID: u.ID, Name: "s", Domain: "s.test", Pages: []string{"/"}, CreatedAt: start}
		must(t, st.CreateUser(ctx, u))
		must(t, st.CreateSite(ctx, site))
		must(t, st.SetRetention(ctx, u.ID, 30))
		var ids []string
		for i := range 4 {
			at := start.Add(time.Duration(i) * 24 * time.Hour)
			sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: at}
			must(t, st.EnqueueScan(ctx, sc, store.KindScan, at))
			j, err := st.ClaimJob(ctx, store.KindScan, "w", at, 0)
			must(t, err)
			must(t, st.StartScan(ctx, j.Lease(), 1, at))
			perf := 50 + i
			must(t, st.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", PageURL: "https://s.test/", Strategy: "mobile", Scores: store.PageScores{Performance: &perf}}))
			must(t, st.CompleteScan(ctx, j.Lease(), store.ScanScores{Performance: &perf}, at))
			ids = append(ids, sc.ID)
		}
		p := NewPool(PoolConfig{Store: st, Retention: st, Now: clock.Now})
		if n, err := p.PruneOnce(ctx); err != nil || n != 0 {
			t.Fatalf("pruned %d rows (err %v) within the retention", n, err)
		}
		clock.Advance(40 * 24 * time.Hour)
		for range 3 { // every process's scheduler asks; one job is queued
			must2(st.EnqueuePrune(ctx, clock.Now(), PruneEvery))
		}
		if ran, err := p.WorkOnce(ctx, store.KindPrune); err != nil || !ran {
			t.Fatalf("no prune job ran (err %v)", err)
		}
		if ran, _ := p.WorkOnce(ctx, store.KindPrune); ran {
			t.Fatal("a second prune job ran")
		}
		for i, id := range ids {
			res, err := st.PageResults(ctx, u.ID, id)
			must(t, err)
			sc, err := st.Scan(ctx, u.ID, id)
			must(t, err)
			if want := map[bool]int{true: 0, false: 1}[i < 2]; len(res) != want || (sc.DetailsPrunedAt != nil) != (i < 2) {
				t.Errorf("scan %d: %d results, pruned at %v; want %d", i, len(res), sc.DetailsPrunedAt, want)
			}
			if s, ok := sc.Summary.Strategy("mobile"); !ok || *s.Scores.Performance != 50+i {
				t.Errorf("scan %d lost its summary: %+v", i, sc.Summary)
			}
		}
	}})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func must2(_ bool, err error) {
	if err != nil {
		panic(err)
	}
}

// The pruner also applies AUDIT_LOG_RETENTION_DAYS to the security log, the log's only delete:
// lines older than the bound go, the rest stay.
func TestPruneSecurityLog(t *testing.T) {
	onStores(t, storeTest{name: "security log retention", fn: func(t *testing.T, st store.Store) {
		ctx := context.Background()
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := scantest.NewClock(start)
		u := store.User{ID: store.NewID(), Email: "p@example.com", PasswordHash: "x", CreatedAt: start}
		must(t, st.CreateUser(ctx, u))
		_, err := st.AppendLog(ctx, store.LogEvent{WorkspaceID: u.ID, ActorID: u.ID, Kind: store.LogSignIn, At: start},
			store.LogEvent{WorkspaceID: u.ID, ActorID: u.ID, Kind: store.LogSignOut, At: start.Add(20 * 24 * time.Hour)})
		must(t, err)
		p := NewPool(PoolConfig{Store: st, Retention: st, SecurityLog: st, LogRetention: 30 * 24 * time.Hour, Now: clock.Now})
		clock.Advance(40 * 24 * time.Hour)
		_, err = p.PruneOnce(ctx)
		must(t, err)
		lines, err := st.LogOf(ctx, store.LogFilter{WorkspaceID: u.ID})
		must(t, err)
		if len(lines) != 1 || lines[0].Kind != store.LogSignOut {
			t.Errorf("after 40 days with a 30-day retention the log holds %+v, want the sign-out only", lines)
		}
	}})
}
