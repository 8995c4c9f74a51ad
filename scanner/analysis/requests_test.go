package analysis_test

import (
	"testing"

	"sitepulse/scanner/analysis"
)

// Requests lists every request of both runs once, matched as Compare matches them: the requests
// only After made are Compare's Added, those only Before made its Removed, After's first.
func TestRequestsMatchCompare(t *testing.T) {
	for _, name := range []string{"home.mobile", "pricing.desktop", "blog.mobile"} {
		t.Run(name, func(t *testing.T) {
			before, after := run(t, "psi-before", name), run(t, "psi", name)
			c := analysis.Compare(before, after)
			reqs := analysis.Requests(before.Explain, after.Explain)
			var added, removed int
			for i, r := range reqs {
				switch {
				case r.Before == nil:
					added++
				case r.After == nil:
					removed++
				}
				if i < len(after.Explain.Requests) && r.After != &after.Explain.Requests[i] {
					t.Errorf("request %d is not After's %d", i, i)
				}
			}
			if added != len(c.Added) || removed != len(c.Removed) || len(reqs) != len(after.Explain.Requests)+len(c.Removed) {
				t.Errorf("%d requests, %d added, %d removed; Compare: %d added, %d removed, After made %d",
					len(reqs), added, removed, len(c.Added), len(c.Removed), len(after.Explain.Requests))
			}
		})
	}
	if analysis.Requests(nil, nil) != nil {
		t.Error("runs without explain data have requests")
	}
}
