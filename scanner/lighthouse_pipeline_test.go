package scanner

import (
	"context"

	"fmt"
	"log/slog"
	"net"
	"net/http"

	"os"
	"os/exec"
	"path/filepath"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
	"testing"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/scanner/lighthouse/chrometest"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/psi"
)

// lighthouseInstall finds a Lighthouse CLI, Chromium and python3, or skips (fails under
// CI=true): chrometest.Find, as scanner/lighthouse's real-Chrome tests do.
func lighthouseInstall(t *testing.T) (cmd, chrome string) {
	t.Helper()
	return chrometest.Find(t, lighthouse.Home, lighthouse.InstallCommand, "python3") // python3 serves the sample site
}

// freePort is a port of 127.0.0.1 nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// serveSample serves a docroot of testdata/site with its serve.py on a free port.
func serveSample(t *testing.T, docroot string) int {
	t.Helper()
	port := freePort(t)
	serveOn(t, filepath.Join("../testdata/site", docroot), port)
	return port
}

// serveOn serves a docroot with testdata/site/serve.py on a given port until the returned stop.
func serveOn(t *testing.T, docroot string, port int) (stop func()) {
	t.Helper()
	c := exec.Command("python3", "../testdata/site/serve.py", docroot, fmt.Sprint(port))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			c.Process.Kill()
			c.Wait()
		}
	}
	t.Cleanup(stop)
	storetest.WaitFor(t, "serve.py "+docroot+" to answer", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/robots.txt", port))
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return stop
}

// sampleLighthouse is the local Lighthouse backend set up for the sample site, its third parties
// (cdn.widgetly.test, static.hotjar.com, and moreHosts) served on port third: Chrome maps their names there, and
// so does the run's proxy, which Chrome sends every request to.
func sampleLighthouse(t *testing.T, third int, moreHosts ...string) *lighthouse.Runner {
	t.Helper()
	cmd, chrome := lighthouseInstall(t)
	rules := ""
	thirdParty := map[string]string{}
	for _, h := range append([]string{"cdn.widgetly.test", "static.hotjar.com"}, moreHosts...) {
		rules += fmt.Sprintf("MAP %s:80 127.0.0.1:%d,", h, third)
		thirdParty[h+":80"] = fmt.Sprintf("127.0.0.1:%d", third)
	}
	rules += "MAP * ~NOTFOUND,EXCLUDE 127.0.0.1,EXCLUDE localhost"
	flags := `--headless=new --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync --host-resolver-rules="` + rules + `"`
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		if to, ok := thirdParty[address]; ok {
			address = to
		}
		return netguard.Guard{AllowPrivate: true}.DialContext(ctx, network, address)
	}
	return lighthouse.New(lighthouse.Config{Command: cmd, ChromePath: chrome, ChromeFlags: flags, Timeout: 4 * time.Minute, Guard: netguard.Guard{AllowPrivate: true}, Dial: dial})
}

// A real Lighthouse, through the pool, over the sample site served locally: the scan completes
// with real results. By default it audits /fast and / (four runs, about a minute);
// LIGHTHOUSE_ALL_PAGES=1 discovers all five pages from the site's sitemap.xml.
func TestLighthouseRealScan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	lighthouseInstall(t) // skips before anything is served when Lighthouse is missing
	mainPort := serveSample(t, "main")
	third := serveSample(t, "thirdparty")
	lh := sampleLighthouse(t, third)

	st := memory.New()
	st.Rules = store.SiteRules{AllowPrivate: true}                                                      // the sample site is a server on 127.0.0.1
	r := &rig{t: t, st: st, logs: &scantest.LogBuffer{}, psi: scantest.NewInProcess("../testdata/psi")} // the PSI is unused
	r.user = store.User{ID: store.NewID(), Email: "lh@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	if err := st.CreateUser(context.Background(), r.user); err != nil {
		t.Fatal(err)
	}
	pages := []string{"/fast", "/"}
	if os.Getenv("LIGHTHOUSE_ALL_PAGES") == "1" {
		pages = nil // from the sitemap
	}
	site := store.Site{ID: store.NewID(), UserID: r.user.ID, Name: "Sample site", Domain: fmt.Sprintf("http://127.0.0.1:%d", mainPort), Pages: pages, CreatedAt: time.Now()}
	if err := st.CreateSite(context.Background(), site); err != nil {
		t.Fatal(err)
	}
	r.pool(func(c *PoolConfig) {
		c.Auditor, c.Workers, c.Capacity, c.Lease = lh, 1, psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1}), time.Minute
		c.Log = slog.New(slog.NewTextHandler(r.logs, nil))
	})
	sc := r.enqueue(site)
	got := r.scanEnded(sc.ID, 15*time.Minute)
	results, errs := r.results(sc.ID)
	for _, res := range results {
		t.Logf("%-8s %-7s perf %v a11y %v bp %v seo %v  LCP %v ms  CLS %v  TBT %v ms  third parties %d  LH %s", res.PagePath, res.Strategy,
			intOrNil(res.Scores.Performance), intOrNil(res.Scores.Accessibility), intOrNil(res.Scores.BestPractices), intOrNil(res.Scores.SEO),
			floatOrNil(res.CoreWebVitals.LCP), floatOrNil(res.CoreWebVitals.CLS), floatOrNil(res.CoreWebVitals.TBT), len(res.ThirdPartyScripts), res.LighthouseVersion)
	}
	for _, e := range errs {
		t.Logf("%s %s error: %s", e.PagePath, e.Strategy, e.Error)
	}
	t.Logf("scan %s: %d/%d, scores %s", got.Status, got.PagesDone, got.PagesTotal, fmtScores(got.Scores))
	if got.Status != store.StatusComplete || len(errs) != 0 || len(results) != got.PagesTotal {
		t.Fatalf("scan %s (%s) with %d results and %d errors; logs:\n%s", got.Status, got.Error, len(results), len(errs), r.logs.String())
	}
	for _, res := range results {
		if res.Crux.HasCruxData || res.CoreWebVitals.INP != nil {
			t.Errorf("%s %s: a lab run has no field data", res.PagePath, res.Strategy)
		}
		if res.Scores.Performance == nil || res.CoreWebVitals.LCP == nil {
			t.Errorf("%s %s: no performance score or LCP", res.PagePath, res.Strategy)
		}
	}
}

func fmtScores(s store.ScanScores) string {
	return fmt.Sprintf("health %v perf %v a11y %v bp %v seo %v", intOrNil(s.Health), intOrNil(s.Performance),
		intOrNil(s.Accessibility), intOrNil(s.BestPractices), intOrNil(s.SEO))
}

// scanEnded waits for scan id to complete or fail and answers it as it then is (or as it is
// when guard runs out). A real Chromium audits for minutes, beyond storetest.Timeout, so the
// wait has its own guard: a bound against a hang, never a measure.
func (r *rig) scanEnded(id string, guard time.Duration) store.Scan {
	r.t.Helper()
	var got store.Scan
	storetest.EventuallyWithin(guard, func() bool {
		got, _ = r.st.Scan(context.Background(), r.user.ID, id)
		return got.Status.Terminal()
	})
	return got
}
