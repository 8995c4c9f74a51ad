package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"sitepulse/store/storetest"
)

// callAt calls a tool as userID at protocol version v (2025-06-18 or later) and returns its result.
func (f *fixture) callAt(t *testing.T, v, userID, name string, args map[string]any) map[string]any {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	_, m := f.send(t, userID, map[string]string{"Mcp-Protocol-Version": v}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+string(params)+`}`)
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("%s: %v", name, m)
	}
	return r
}

// TestRegressionReportSaysWhy: from 2025-06-18 on every regression of the demo (the recorded
// before/after runs of one publish, testdata/psi-before/site-before.diff) carries its cause
// sentence and the structured changes of its page: / names the widget, the unsized images and
// the promo banner, /pricing its slower document; the lists are bounded. 2025-03-26 keeps the
// interface's payload, without either.
func TestRegressionReportSaysWhy(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			old := payload(t, f.tool(t, f.userID, "get_regression_report", map[string]any{"siteId": f.demo.SiteID}))
			for _, r := range old["regressions"].([]any) {
				if _, ok := r.(map[string]any)["cause"]; ok {
					t.Fatalf("a 2025-03-26 client got a cause: %v", r)
				}
			}
			for _, v := range []string{"2025-06-18", "2025-11-25"} {
				got := payload(t, f.callAt(t, v, f.userID, "get_regression_report", map[string]any{"siteId": f.demo.SiteID}))
				regs, _ := got["regressions"].([]any)
				if len(regs) == 0 {
					t.Fatalf("%s: no regressions: %v", v, got)
				}
				causes := map[string]string{}
				for _, x := range regs {
					r := x.(map[string]any)
					cause, _ := r["cause"].(string)
					if cause == "" {
						t.Errorf("%s: regression %v has no cause", v, r)
					}
					ch, _ := r["changes"].(map[string]any)
					if ch == nil || ch["explained"] != true {
						t.Fatalf("%s: regression %v: changes %v, want explained ones", v, r["metric"], ch)
					}
					for _, list := range []string{"added", "removed", "grown"} {
						if n := len(ch[list].([]any)); n > maxChangedRequests || float64(n) > ch[list+"Count"].(float64) {
							t.Errorf("%s: %s lists %d of %v requests, want at most %d", v, list, n, ch[list+"Count"], maxChangedRequests)
						}
					}
					if _, ok := ch["lcp"].(map[string]any)["phases"].([]any); !ok {
						t.Errorf("%s: changes without LCP phases: %v", v, ch["lcp"])
					}
					causes[r["pagePath"].(string)+" "+r["strategy"].(string)+" "+r["metric"].(string)] = cause
				}
				for key, want := range map[string][]string{
					"/ mobile cls":                {"CLS +0.39", "unsized", "hero.jpg"},
					"/ mobile performance":        {"widgetly.test"},
					"/pricing mobile performance": {"document"},
				} {
					for _, w := range want {
						if !strings.Contains(causes[key], w) {
							t.Errorf("%s: cause of %s = %q, want it to name %q", v, key, causes[key], w)
						}
					}
				}
				for key, c := range causes {
					if strings.HasPrefix(key, "/blog ") || strings.HasPrefix(key, "/about ") || strings.HasPrefix(key, "/fast ") {
						t.Errorf("%s: %s regressed with cause %q; the fixtures did not change it", v, key, c)
					}
				}
			}
		})
	}
}
