package scanner

import (
	"testing"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
)

// A scan records the pages found beside those it audits: the sample site's five saved pages
// under a cap of two audit two and say five.
func TestScanRecordsPagesFound(t *testing.T) {
	r := newRig(t, memory.New())
	sc := r.enqueue(r.site)
	r.pool(func(c *PoolConfig) { c.Discovery = discover.Discovery{MaxPages: 2} })
	got := r.wait(sc.ID)
	if got.Status != store.StatusComplete || got.PagesFound != len(scantest.SamplePages()) || got.PagesAudited != 2 || !got.Capped() {
		t.Errorf("scan %s: %d found, %d audited (%d pairs), capped %v; want %d found, 2 audited",
			got.Status, got.PagesFound, got.PagesAudited, got.PagesTotal, got.Capped(), len(scantest.SamplePages()))
	}
}
