package notify

import (
	"context"
	"testing"

	"sitepulse/store"
	"sitepulse/store/memory"
)

// The digest's job: a scan deleted meanwhile has nothing to say and is done; a digest asks for
// more attempts than a scan. (Sending, and its failure retried, run through the pool in
// scanner's TestPipeline.)
func TestDigestWork(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	d := &Digest{Store: st, From: "SitePulse <sitepulse@example.com>"}
	if err := d.Work(ctx, store.Job{}, DigestJob{ScanID: store.NewID()}); err != nil {
		t.Errorf("the digest of a deleted scan: %v, want done", err)
	}
	if got := store.MaxAttemptsOf(DigestJob{}); got <= store.MaxAttempts {
		t.Errorf("a digest gets %d attempts, want more than a scan's %d", got, store.MaxAttempts)
	}
	if jobs := AfterScan("s1"); len(jobs) != 1 || jobs[0] != (DigestJob{ScanID: "s1"}) {
		t.Errorf("AfterScan = %+v", jobs)
	}
}
