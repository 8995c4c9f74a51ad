package storetest_test

import (
	"testing"
	"time"

	"sitepulse/store"
)

// A scan whose process died keeps its place in the queue: it was runnable, and ran, before the
// jobs queued after it, so a backlog must not push a half-done scan (shown as running, with
// its progress) to the back. Found by the scale-out crash test with 100 sites: the survivor
// resumed the dead process's scans only after the whole backlog, 58 s after the kill.
func testRescueKeepsPlace(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	first := enqueue(t, s, newSite(t, s, a, "first"), t0)
	died, err := s.ClaimJob(ctx, store.KindScan, "dead", t0, 0)
	must(t, err)
	if died.ScanID != first.ID {
		t.Fatalf("claimed %s, want the first scan", died.ScanID)
	}
	var later []string
	for i, name := range []string{"second", "third"} {
		later = append(later, enqueue(t, s, newSite(t, s, a, name), t0.Add(time.Duration(i+1)*time.Second)).ID)
	}
	rescueAt := t0.Add(5 * time.Minute)
	n, err := s.RescueJobs(ctx, rescueAt.Add(-2*time.Minute), rescueAt)
	must(t, err)
	if n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	for _, want := range append([]string{first.ID}, later...) {
		j, err := s.ClaimJob(ctx, store.KindScan, "survivor", rescueAt, 0)
		must(t, err)
		if j.ScanID != want {
			t.Errorf("claimed scan %s, want %s", j.ScanID, want)
		}
	}
}
