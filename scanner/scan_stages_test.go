package scanner

import (
	"errors"
	"reflect"
	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// planPairs, the plan stage's rule alone: every page in every strategy, less what an earlier
// attempt stored, and a total that counts the discovery note.
func TestPlanPairs(t *testing.T) {
	m, d := store.StrategyMobile, store.StrategyDesktop
	tests := []struct {
		name      string
		pages     []string
		strategy  store.Strategy
		done      []store.PageKey
		limited   bool
		wantPairs []auditPair
		wantTodo  []auditPair
		wantTotal int
	}{
		{name: "both strategies, mobile first", pages: []string{"/", "/a"}, strategy: store.StrategyBoth,
			wantPairs: []auditPair{{"/", m}, {"/", d}, {"/a", m}, {"/a", d}}, wantTodo: []auditPair{{"/", m}, {"/", d}, {"/a", m}, {"/a", d}}, wantTotal: 4},
		{name: "one strategy", pages: []string{"/"}, strategy: d, wantPairs: []auditPair{{"/", d}}, wantTodo: []auditPair{{"/", d}}, wantTotal: 1},
		{name: "a re-run resumes", pages: []string{"/", "/a"}, strategy: m, done: []store.PageKey{{PagePath: "/", Strategy: m}},
			wantPairs: []auditPair{{"/", m}, {"/a", m}}, wantTodo: []auditPair{{"/a", m}}, wantTotal: 2},
		{name: "the cap's note counts as done", pages: []string{"/"}, strategy: m, limited: true,
			wantPairs: []auditPair{{"/", m}}, wantTodo: []auditPair{{"/", m}}, wantTotal: 2},
		{name: "an earlier attempt's note too", pages: []string{"/"}, strategy: m, done: []store.PageKey{discoveryNote},
			wantPairs: []auditPair{{"/", m}}, wantTodo: []auditPair{{"/", m}}, wantTotal: 2},
		{name: "all stored", pages: []string{"/"}, strategy: m, done: []store.PageKey{{PagePath: "/", Strategy: m}},
			wantPairs: []auditPair{{"/", m}}, wantTotal: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pairs, todo, total := planPairs(tt.pages, tt.strategy, tt.done, tt.limited)
			if !reflect.DeepEqual(pairs, tt.wantPairs) || !reflect.DeepEqual(todo, tt.wantTodo) || total != tt.wantTotal {
				t.Errorf("got %v, %v, %d; want %v, %v, %d", pairs, todo, total, tt.wantPairs, tt.wantTodo, tt.wantTotal)
			}
		})
	}
}

// failReason, the finish stage's words for a scan with no result.
func TestFailReason(t *testing.T) {
	note := store.PageError{PagePath: "/sitemap.xml", Strategy: analysis.DiscoveryNote, Error: "capped"}
	refused := store.PageError{PagePath: "/", Strategy: store.StrategyMobile, Error: "connection refused"}
	tests := []struct {
		name    string
		errs    []store.PageError
		audits  int
		limited error
		want    string
	}{
		{"nothing stored", nil, 2, nil, "no page could be audited"},
		{"the first failure", []store.PageError{note, refused, refused}, 4, nil,
			"no page could be audited (2 of 4 failed); / mobile: connection refused"},
		{"and the cap", []store.PageError{refused}, 1, errors.New("12 pages found, 10 audited"),
			"no page could be audited (1 of 1 failed); / mobile: connection refused; 12 pages found, 10 audited"},
	}
	for _, tt := range tests {
		if got := failReason(tt.errs, tt.audits, tt.limited); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
