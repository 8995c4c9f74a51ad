package storetest_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"sitepulse/store"
)

// partitioned is the Postgres store's view of its month partitions (migration 043).
type partitioned interface {
	Partitions(ctx context.Context) ([]time.Time, error)
}

// testPruneMonths drops a month on both stores' terms (issue 46): a month goes whole when it
// ended and no scan of it is kept by any workspace's retention; a month that straddles a
// workspace's window, or holds a scan of a workspace that keeps everything, stays for the
// row-by-row pruner. On Postgres the months are partitions made ahead by the same call.
func testPruneMonths(t *testing.T, s store.Store) {
	at := func(month time.Month, d int) time.Time { return time.Date(2031, month, d, 12, 0, 0, 0, time.UTC) }
	// The pruner of 10 January makes January to March (and drops the empty months before).
	dropped, err := s.PruneMonths(ctx, at(1, 10))
	must(t, err)
	if len(dropped) != 0 {
		t.Fatalf("an empty store dropped %v", dropped)
	}
	a := newUser(t, s, "a@example.com")
	must(t, s.SetRetention(ctx, a.ID, 30))
	site := newSite(t, s, a, "site")
	var scans []store.Scan
	for _, d := range []time.Time{at(1, 5), at(1, 20), at(2, 10), at(3, 5), at(3, 15), at(3, 20)} {
		scans = append(scans, finishedScan(t, s, site, d, summaryResults(), 1, false))
	}
	b := newUser(t, s, "b@example.com")
	must(t, s.SetRetention(ctx, b.ID, 0)) // keeps everything: its February scan keeps February
	bSite := newSite(t, s, b, "b")
	bFeb := finishedScan(t, s, bSite, at(2, 12), summaryResults(), 0, false)
	for _, d := range []time.Time{at(3, 25), at(3, 26)} {
		finishedScan(t, s, bSite, d, summaryResults(), 0, false)
	}
	details := func(u store.User, id string) int {
		t.Helper()
		res, err := s.PageResults(ctx, u.ID, id)
		must(t, err)
		errs, err := s.PageErrors(ctx, u.ID, id)
		must(t, err)
		return len(res) + len(errs)
	}
	bytesBefore, err := s.WorkspaceBytes(ctx, a.ID)
	must(t, err)

	now := at(4, 10) // makes April to June
	dropped, err = s.PruneMonths(ctx, now)
	must(t, err)
	if !reflect.DeepEqual(dropped, []string{"2031-01"}) {
		t.Fatalf("dropped %v, want January only (February holds a scan kept for ever, March one within 30 days)", dropped)
	}
	if n := details(a, scans[0].ID); n != 0 {
		t.Errorf("a January scan has %d details right after its month went", n)
	}
	for _, sc := range scans[2:] {
		if n := details(a, sc.ID); n != 5 {
			t.Errorf("scan of %v has %d details after the month drop, want its 5", sc.CreatedAt, n)
		}
	}
	if p, ok := s.(partitioned); ok {
		months, err := p.Partitions(ctx)
		must(t, err)
		var names []string
		for _, m := range months {
			names = append(names, m.Format("2006-01"))
		}
		if !reflect.DeepEqual(names, []string{"2031-02", "2031-03", "2031-04", "2031-05", "2031-06"}) {
			t.Errorf("partitions %v, want February on (January dropped) to June (two months ahead of April)", names)
		}
	}
	// The prune job's next step marks the dropped month's scans and prunes the straddling
	// months' rows row by row, as before.
	for range 100 {
		n, err := s.PruneDetails(ctx, now, store.PruneBatch)
		must(t, err)
		if n == 0 {
			break
		}
	}
	for _, sc := range scans[:2] {
		got, err := s.Scan(ctx, a.ID, sc.ID)
		must(t, err)
		if n := details(a, sc.ID); n != 0 || got.DetailsPrunedAt == nil || !got.DetailsPrunedAt.Equal(now) || got.Bytes != store.PrunedScanBytes {
			t.Errorf("January scan: %d details, pruned at %v, %d bytes; want none, %v, %d", n, got.DetailsPrunedAt, got.Bytes, now, store.PrunedScanBytes)
		}
		if got.Summary == nil {
			t.Error("a dropped month's scan lost its summary")
		}
	}
	if got, _ := s.WorkspaceBytes(ctx, a.ID); got >= bytesBefore {
		t.Errorf("workspace bytes %d after the drop, %d before", got, bytesBefore)
	}
	for i, want := range []int{0, 0, 0, 0, 5, 5} {
		if n := details(a, scans[i].ID); n != want {
			t.Errorf("scan %d of a: %d details after pruning, want %d", i, n, want)
		}
	}
	if n := details(b, bFeb.ID); n != 4 {
		t.Errorf("the scan of the workspace that keeps everything has %d results, want 4", n)
	}
	if dropped, _ := s.PruneMonths(ctx, now); len(dropped) != 0 {
		t.Errorf("a second run dropped %v", dropped)
	}

	// Once b keeps 30 days, February is past every workspace's window: it goes whole.
	must(t, s.SetRetention(ctx, b.ID, 30))
	dropped, err = s.PruneMonths(ctx, now)
	must(t, err)
	if !reflect.DeepEqual(dropped, []string{"2031-02"}) {
		t.Fatalf("dropped %v, want February", dropped)
	}
	if n := details(b, bFeb.ID); n != 0 {
		t.Errorf("b's February scan has %d results after its month went", n)
	}
	if p, ok := s.(partitioned); ok {
		months, err := p.Partitions(ctx)
		must(t, err)
		if slices.ContainsFunc(months, func(m time.Time) bool { return m.Month() == time.February }) {
			t.Errorf("February's partition is still there: %v", months)
		}
	}
}
