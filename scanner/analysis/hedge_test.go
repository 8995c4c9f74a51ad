package analysis

import "testing"

// A one-line surface states a high cause plainly and hedges a less sure one; the scan page's
// tag explains every level.
func TestHedgeAndMeaning(t *testing.T) {
	for _, tc := range []struct{ level, hedge string }{
		{ConfidenceHigh, ""}, {ConfidenceMedium, "medium confidence"}, {ConfidenceLow, "low confidence"}, {"", ""},
	} {
		if got := Hedge(tc.level); got != tc.hedge {
			t.Errorf("Hedge(%q) = %q, want %q", tc.level, got, tc.hedge)
		}
		if got := ConfidenceMeaning(tc.level); (got == "") != (tc.level == "") {
			t.Errorf("ConfidenceMeaning(%q) = %q", tc.level, got)
		}
	}
}
