package handlers

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/demo"
	"sitepulse/store"
)

// TestUISiteShowsTheDemoRecovery: the demo's scan after its regressions replays the site before
// the bad publish (issue 37), and the site page says what recovered, and how the demo's scans
// alternate.
func TestUISiteShowsTheDemoRecovery(t *testing.T) {
	eachBackend(t, 0, func(t *testing.T, f *uiFixture) {
		before, err := demo.BeforeRuns(demo.Fixtures{FS: os.DirFS(".."), Before: "testdata/psi-before"})
		must(t, err)
		ctx, st, at := context.Background(), f.ts.store, f.ts.now.Add(-time.Minute)
		sc := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: at}
		must(t, st.EnqueueScan(ctx, sc, store.KindDemo, at))
		job, err := st.ClaimJob(ctx, store.KindDemo, "test", at, 0)
		must(t, err)
		must(t, st.StartScan(ctx, job.Lease(), len(before), at))
		for _, r := range before {
			must(t, st.SavePageResult(ctx, job.Lease(), r))
		}
		must(t, st.CompleteScan(ctx, job.Lease(), analysis.ScanScores(before), at.Add(30*time.Second)))

		resp, body := f.a.get("/sites/" + f.site)
		wantStatus(t, resp, 200)
		for _, want := range []string{`id="recovered"`, "got better since that scan", `<span class="mono">/pricing</span> mobile`,
			"alternately before and after the bad publish"} {
			if !strings.Contains(body, want) {
				t.Errorf("the site page lacks %q", want)
			}
		}
	})
}
