package lighthouse

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sitepulse/store"
)

// Every real fixture extracts to its golden page result.
func TestExtractGolden(t *testing.T) {
	names := fixtureNames()
	if len(names) != 15 {
		t.Fatalf("found %d fixtures, want 15", len(names))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r, err := ExtractPSI(fixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("extract", strings.ReplaceAll(name, "/", "_")), r)
		})
	}
}

func ip(v int) *int         { return &v }
func fp(v float64) *float64 { return &v }

func eqInt(a, b *int) bool       { return a == nil && b == nil || a != nil && b != nil && *a == *b }
func eqFloat(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
func show(p any) string          { b, _ := json.Marshal(p); return string(b) }

// The facts the fixtures' README states about each real run come out of extraction.
func TestExtractFacts(t *testing.T) {
	tests := []struct {
		file                string
		strategy            store.Strategy
		path                string
		perf, a11y, bp, seo int
		lcp                 float64
		cls                 float64
		hasCrux             bool
		cruxCLS, inp        *float64
		lcpSelector         string
		thirdParties        []string
		stackPack           string
	}{
		{"home.mobile.json", "mobile", "/", 16, 82, 73, 92, 8305, 0.3896, true, nil, nil, "body > section.hero > img.hero-img", []string{"cdn.widgetly.test", "static.hotjar.com"}, ""},
		{"home.desktop.json", "desktop", "/", 43, 82, 77, 92, 1983, 0.3437, true, nil, nil, "body > section.hero > img.hero-img", []string{"cdn.widgetly.test", "static.hotjar.com"}, ""},
		{"blog.mobile.json", "mobile", "/blog/", 92, 92, 77, 92, 2654, 0.0755, true, nil, nil, "main > div.posts > article.post > img", []string{"static.hotjar.com"}, "wordpress"},
		{"pricing.mobile.json", "mobile", "/pricing", 44, 62, 58, 91, 4621, 0, false, nil, nil, "body > main > h1", []string{"cdn.widgetly.test"}, ""},
		{"about.desktop.json", "desktop", "/about", 100, 28, 92, 25, 602, 0, false, nil, nil, "body > main > img", nil, ""},
		{"fast.desktop.json", "desktop", "/fast", 100, 100, 100, 100, 215, 0, true, nil, nil, "body > main > img", nil, ""},
		{"lh12/home.mobile.json", "mobile", "/", 16, 82, 75, 92, 8302, 0.3896, true, nil, nil, "body > section.hero > img.hero-img", []string{"cdn.widgetly.test", "static.hotjar.com"}, ""},
		{"lh12/pricing.mobile.json", "mobile", "/pricing", 43, 64, 61, 91, 4627, 0, false, nil, nil, "body > main > h1", []string{"cdn.widgetly.test"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := ExtractPSI(fixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.Strategy != tt.strategy || r.PagePath != tt.path {
				t.Errorf("strategy %q path %q", r.Strategy, r.PagePath)
			}
			want := store.PageScores{Performance: ip(tt.perf), Accessibility: ip(tt.a11y), BestPractices: ip(tt.bp), SEO: ip(tt.seo)}
			if show(r.Scores) != show(want) {
				t.Errorf("scores %s, want %s", show(r.Scores), show(want))
			}
			if !eqFloat(r.CoreWebVitals.LCP, fp(tt.lcp)) || !eqFloat(r.CoreWebVitals.CLS, fp(tt.cls)) {
				t.Errorf("lcp %s cls %s, want %v %v", show(r.CoreWebVitals.LCP), show(r.CoreWebVitals.CLS), tt.lcp, tt.cls)
			}
			if r.Crux.HasCruxData != tt.hasCrux {
				t.Errorf("hasCruxData %v", r.Crux.HasCruxData)
			}
			if !tt.hasCrux && (r.Crux.LCP != nil || r.Crux.CLS != nil || r.Crux.INP != nil || r.CoreWebVitals.INP != nil) {
				t.Errorf("no field data, yet crux %s inp %s", show(r.Crux), show(r.CoreWebVitals.INP))
			}
			if r.LCPElement == nil || r.LCPElement.Selector != tt.lcpSelector {
				t.Errorf("lcp element %s", show(r.LCPElement))
			}
			var domains []string
			for _, tp := range r.ThirdPartyScripts {
				domains = append(domains, tp.Domain)
			}
			if show(domains) != show(tt.thirdParties) {
				t.Errorf("third parties %v, want %v", domains, tt.thirdParties)
			}
			if tt.stackPack != "" && (len(r.StackPacks) != 1 || r.StackPacks[0].ID != tt.stackPack) {
				t.Errorf("stack packs %s", show(r.StackPacks))
			}
			if r.CoreWebVitals.TTI == nil || r.CoreWebVitals.TBT == nil || r.CoreWebVitals.SpeedIndex == nil || r.CoreWebVitals.FCP == nil || r.CoreWebVitals.TTFB == nil {
				t.Errorf("vitals incomplete: %s", show(r.CoreWebVitals))
			}
			if r.Diagnostics["numRequests"] == nil {
				t.Errorf("diagnostics %v", r.Diagnostics)
			}
		})
	}
}

func TestExtractFieldData(t *testing.T) {
	home, _ := ExtractPSI(fixture(t, "home.mobile.json"))
	// CrUX sends CLS x100; the page result holds the real value.
	if home.Crux.CLS == nil || *home.Crux.CLS >= 1 || *home.Crux.CLS <= 0 {
		t.Errorf("crux cls %s: not divided by 100", show(home.Crux.CLS))
	}
	if home.Crux.INP == nil || !eqFloat(home.CoreWebVitals.INP, home.Crux.INP) {
		t.Errorf("lab INP %s should be the field p75 %s", show(home.CoreWebVitals.INP), show(home.Crux.INP))
	}
	fast, _ := ExtractPSI(fixture(t, "fast.desktop.json"))
	if !fast.Crux.HasCruxData || fast.Crux.INP != nil || fast.CoreWebVitals.INP != nil || fast.Crux.LCP == nil {
		t.Errorf("fast.desktop has field data without INP: %s", show(fast.Crux))
	}
}

// mutate changes a real fixture the way a failing run would, for the cases the real runs lack.
func mutate(t *testing.T, name string, fn func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fixture(t, name), &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	b, _ := json.Marshal(m)
	return b
}

func lhrOf(m map[string]any) map[string]any { return m["lighthouseResult"].(map[string]any) }

func TestExtractEdgeCases(t *testing.T) {
	t.Run("a null category score stays null", func(t *testing.T) {
		body := mutate(t, "blog.mobile.json", func(m map[string]any) {
			lhrOf(m)["categories"].(map[string]any)["performance"].(map[string]any)["score"] = nil
		})
		r, err := ExtractPSI(body)
		if err != nil {
			t.Fatal(err)
		}
		if r.Scores.Performance != nil || !eqInt(r.Scores.SEO, ip(92)) {
			t.Errorf("scores %s", show(r.Scores))
		}
	})
	t.Run("all scores null is a failed audit", func(t *testing.T) {
		body := mutate(t, "blog.mobile.json", func(m map[string]any) {
			for _, c := range lhrOf(m)["categories"].(map[string]any) {
				c.(map[string]any)["score"] = nil
			}
		})
		if _, err := ExtractPSI(body); !errors.Is(err, ErrNoResult) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("a runtime error is a failed audit naming its code", func(t *testing.T) {
		body := mutate(t, "blog.mobile.json", func(m map[string]any) {
			lhrOf(m)["runtimeError"] = map[string]any{"code": "NO_FCP", "message": "The page did not paint any content."}
		})
		_, err := ExtractPSI(body)
		if !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), "NO_FCP") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("origin fallback is not the page's field data", func(t *testing.T) {
		body := mutate(t, "home.mobile.json", func(m map[string]any) {
			m["loadingExperience"].(map[string]any)["origin_fallback"] = true
		})
		r, _ := ExtractPSI(body)
		if r.Crux.HasCruxData || r.Crux.LCP != nil || r.CoreWebVitals.INP != nil {
			t.Errorf("crux %s", show(r.Crux))
		}
	})
	t.Run("the older INP key is read", func(t *testing.T) {
		body := mutate(t, "home.mobile.json", func(m map[string]any) {
			metrics := m["loadingExperience"].(map[string]any)["metrics"].(map[string]any)
			metrics["EXPERIMENTAL_INTERACTION_TO_NEXT_PAINT"] = metrics["INTERACTION_TO_NEXT_PAINT"]
			delete(metrics, "INTERACTION_TO_NEXT_PAINT")
		})
		r, _ := ExtractPSI(body)
		if r.Crux.INP == nil {
			t.Error("INP lost")
		}
	})
	t.Run("a PSI error body is a failed audit", func(t *testing.T) {
		_, err := ExtractPSI([]byte(`{"error":{"code":400,"message":"Lighthouse returned error: NO_FCP."}}`))
		if !errors.Is(err, ErrNoResult) || !strings.Contains(err.Error(), "NO_FCP") {
			t.Errorf("err %v", err)
		}
	})
	for _, garbage := range []string{"", "null", "[]", "<html>", `{"lighthouseResult":null}`, `{"lighthouseResult":{}}`, `{"lighthouseResult":{"categories":{"performance":{"score":"x"}}}}`} {
		if _, err := ExtractPSI([]byte(garbage)); err == nil {
			t.Errorf("ExtractPSI(%q) succeeded", garbage)
		}
	}
	t.Run("a CLI report extracts without field data", func(t *testing.T) {
		var m map[string]any
		json.Unmarshal(fixture(t, "pricing.desktop.json"), &m)
		cli, _ := json.Marshal(m["lighthouseResult"])
		r, err := ExtractLighthouse(cli)
		if err != nil {
			t.Fatal(err)
		}
		psi, _ := ExtractPSI(fixture(t, "pricing.desktop.json"))
		if show(r) != show(psi) {
			t.Error("the same report extracts differently from the CLI and from PSI")
		}
	})
}

// The opportunity rule keeps audits below 0.9 with real savings, largest first, in both versions.
func TestOpportunities(t *testing.T) {
	for file, want := range map[string][]string{
		"home.mobile.json":      {"Use efficient cache lifetimes", "Render-blocking requests", "Improve image delivery", "Reduce unused JavaScript", "Reduce unused CSS", "Font display"},
		"lh12/home.mobile.json": {"Eliminate render-blocking resources", "Properly size images", "Serve images in next-gen formats", "Enable text compression", "Reduce unused JavaScript", "Efficiently encode images", "Reduce unused CSS", "Preconnect to required origins"},
		"fast.mobile.json":      {},
	} {
		r, _ := ExtractPSI(fixture(t, file))
		got := []string{}
		for i, o := range r.Opportunities {
			got = append(got, o.Title)
			if o.SavingsMs <= 0 || i > 0 && o.SavingsMs > r.Opportunities[i-1].SavingsMs {
				t.Errorf("%s: bad order or savings %s", file, show(r.Opportunities))
			}
		}
		if show(got) != show(want) {
			t.Errorf("%s: opportunities\n got %v\nwant %v", file, got, want)
		}
	}
}

// Third-party blocking time: LH 12's blockingTime, else LH 13's mainThreadTime.
func TestThirdPartyBlockingTime(t *testing.T) {
	lh13, _ := ExtractPSI(fixture(t, "home.mobile.json"))
	lh12, _ := ExtractPSI(fixture(t, "lh12/home.mobile.json"))
	if lh13.ThirdPartyScripts[0].BlockingTime != 1049 || lh12.ThirdPartyScripts[0].BlockingTime != 4065 {
		t.Errorf("widgetly blocking: lh13 %v (want 1049), lh12 %v (want 4065)", lh13.ThirdPartyScripts[0].BlockingTime, lh12.ThirdPartyScripts[0].BlockingTime)
	}
	if lh13.ThirdPartyScripts[0].TransferSize != 141285 {
		t.Errorf("transfer %v", lh13.ThirdPartyScripts[0].TransferSize)
	}
}

// BenchmarkExtractPSIMobile extracts a real PSI answer (340 kB). cpu-ns/op is the process's CPU
// per extraction (user and system, garbage collection included): robust to a busy machine,
// unlike ns/op, which counts the time it waited for a core.
//
//	go test ./scanner/lighthouse -run '^$' -bench ExtractPSIMobile -benchmem -count 6
func BenchmarkExtractPSIMobile(b *testing.B) {
	body := fixture(b, "home.mobile.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if _, err := ExtractPSI(body); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
