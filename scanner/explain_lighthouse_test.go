package scanner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
)

// applyDiff applies a unified diff (diff -ru's, as testdata/psi-before/site-before.diff) to the
// tree under root, as patch -p<strip> does: each file's path is its "---" line's after strip
// leading components. Every hunk's context must match where the hunk says: a diff that does not
// apply fails the test.
func applyDiff(t *testing.T, root, diffFile string, strip int) {
	t.Helper()
	f, err := os.Open(diffFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "--- ") || i+1 == len(lines) || !strings.HasPrefix(lines[i+1], "+++ ") {
			continue
		}
		name := strings.Fields(strings.TrimPrefix(lines[i], "--- "))[0]
		i++
		parts := strings.Split(name, "/")
		path := filepath.Join(root, filepath.Join(parts[strip:]...))
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src := strings.Split(string(old), "\n")
		var out []string
		at := 0 // next line of src to copy
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "@@ ") {
			i++
			var start int
			if _, err := fmt.Sscanf(strings.Fields(lines[i])[1], "-%d", &start); err != nil {
				t.Fatalf("%s: hunk %q: %v", diffFile, lines[i], err)
			}
			start = max(start-1, 0)
			out = append(out, src[at:start]...)
			at = start
			for i+1 < len(lines) && len(lines[i+1]) > 0 && strings.ContainsRune(" +-\\", rune(lines[i+1][0])) &&
				!strings.HasPrefix(lines[i+1], "--- ") && !strings.HasPrefix(lines[i+1], "+++ ") {
				i++
				l := lines[i]
				switch l[0] {
				case ' ', '-':
					if at >= len(src) || src[at] != l[1:] {
						t.Fatalf("%s does not apply to %s at line %d: %q", diffFile, path, at+1, l)
					}
					if l[0] == ' ' {
						out = append(out, src[at])
					}
					at++
				case '+':
					out = append(out, l[1:])
				case '\\': // "\ No newline at end of file"
				}
			}
		}
		out = append(out, src[at:]...)
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyTree copies the directory from into to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// TestLighthouseRealWhy: a real Lighthouse 13 in real Chromium audits the sample site as it was
// before the bad publish (testdata/site/main with testdata/psi-before/site-before.diff applied)
// and then as it is, on the same address, through the pool; what the two runs of / and /pricing
// on mobile keep explains the regressions by what the publish changed. About two minutes.
func TestLighthouseRealWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	lighthouseInstall(t) // skips before anything is served when Lighthouse is missing
	before := filepath.Join(t.TempDir(), "site")
	copyTree(t, "../testdata/site/main", filepath.Join(before, "main"))
	applyDiff(t, before, "../testdata/psi-before/site-before.diff", 5)
	if b, _ := os.ReadFile(filepath.Join(before, "main", "index.html")); strings.Contains(string(b), "widgetly") {
		t.Fatal("the site before the publish still loads the widget")
	}
	lh := sampleLighthouse(t, serveSample(t, "thirdparty"))
	port := freePort(t)

	st := memory.New()
	st.Rules = store.SiteRules{AllowPrivate: true}
	r := &rig{t: t, st: st, logs: &scantest.LogBuffer{}, psi: scantest.NewInProcess("../testdata/psi")} // the PSI is unused
	r.user = store.User{ID: store.NewID(), Email: "lh@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	ctx := context.Background()
	if err := st.CreateUser(ctx, r.user); err != nil {
		t.Fatal(err)
	}
	r.site = store.Site{ID: store.NewID(), UserID: r.user.ID, Name: "Sample site", Domain: fmt.Sprintf("http://127.0.0.1:%d", port),
		Pages: []string{"/", "/pricing"}, CreatedAt: time.Now()}
	if err := st.CreateSite(ctx, r.site); err != nil {
		t.Fatal(err)
	}
	scan := func() store.Scan {
		p := r.pool(func(c *PoolConfig) {
			c.Auditor, c.Workers, c.Capacity, c.Lease = lh, 1, psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1}), time.Minute
		})
		sc := store.Scan{ID: store.NewID(), SiteID: r.site.ID, Strategy: store.StrategyMobile, Trigger: store.TriggerManual, CreatedAt: time.Now()}
		if err := st.EnqueueScan(ctx, sc, store.KindScan, time.Now()); err != nil {
			t.Fatal(err)
		}
		got := r.scanEnded(sc.ID, 10*time.Minute)
		p.Stop(ctx)
		if _, errs := r.results(sc.ID); got.Status != store.StatusComplete || len(errs) != 0 {
			t.Fatalf("scan %s (%s), page errors %+v; logs:\n%s", got.Status, got.Error, errs, r.logs.String())
		}
		return got
	}
	r.logs = &scantest.LogBuffer{}
	stop := serveOn(t, filepath.Join(before, "main"), port)
	first := scan()
	stop()
	serveOn(t, "../testdata/site/main", port)
	second := scan()

	pairs, err := st.PreviousPairs(ctx, r.user.ID, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pairs.From == nil || pairs.From.ID != first.ID || len(pairs.Pairs) != 2 {
		t.Fatalf("pairs: from %+v, %d pairs", pairs.From, len(pairs.Pairs))
	}
	for _, c := range analysis.CompareAll(pairs.Pairs) {
		t.Logf("%s %s: %s", c.PagePath, c.Strategy, c.Summary)
		if !c.Explained {
			t.Fatalf("%s: a run without explain data", c.PagePath)
		}
		for _, sc := range []string{first.ID, second.ID} {
			if list, _ := st.PageImages(ctx, r.user.ID, sc, c.PagePath, c.Strategy); len(list) == 0 {
				t.Errorf("%s: no screenshot kept of scan %s", c.PagePath, sc)
			}
		}
		if len(c.ThirdPartiesAdded) != 1 || c.ThirdPartiesAdded[0].Name != "widgetly.test" {
			t.Errorf("%s: third parties added %+v, want widgetly.test", c.PagePath, c.ThirdPartiesAdded)
		}
		if c.Regressed("tbt") {
			if cause, _ := c.CauseOf("tbt"); !strings.Contains(cause.Sentence, "new third party widgetly.test") {
				t.Errorf("%s: %q", c.PagePath, cause.Sentence)
			}
		}
		switch c.PagePath {
		case "/":
			if len(c.RenderBlockingAdded) != 1 || !strings.HasSuffix(c.RenderBlockingAdded[0].URL, "/fonts/brand.css") {
				t.Errorf("render-blocking added %+v, want the widget's font CSS", c.RenderBlockingAdded)
			}
			if r := c.LCP.Request; r == nil || !strings.HasSuffix(r.URL, "/static/img/hero.jpg") || r.EndDelta < 800 {
				t.Errorf("LCP request %+v, want the hero image about 1.2 s later", r)
			}
			if cause, ok := c.CauseOf("cls"); !ok || !strings.Contains(cause.Sentence, "unsized image") {
				t.Errorf("CLS cause %q, want the unsized images", cause.Sentence)
			}
			if cause, ok := c.CauseOf("lcp"); ok && !strings.Contains(cause.Sentence, "hero.jpg") {
				t.Errorf("LCP cause %q, want the hero image", cause.Sentence)
			}
		case "/pricing":
			found := false
			for _, s := range c.Slower {
				found = found || s.Type == "Document" && s.DurationDelta > 600
			}
			if cause, ok := c.CauseOf("ttfb"); !found || !ok || !strings.Contains(cause.Sentence, "the document /pricing took") {
				t.Errorf("slower %+v, TTFB cause %q: want the document about 0.8 s slower", c.Slower, cause.Sentence)
			}
		}
	}
}
