package analysis

import "testing"

// TestConfidenceOf: a cause is as sure as the share of its metric's change that its reasons
// account for (issue 42 item 3).
func TestConfidenceOf(t *testing.T) {
	reasons := func(w ...float64) []Reason {
		out := []Reason{}
		for i, x := range w {
			out = append(out, Reason{Weight: x, Text: string(rune('a' + i))})
		}
		return out
	}
	lcp := Cause{Metric: "lcp", Delta: 1000, Reasons: reasons(700)}
	for _, tc := range []struct {
		name  string
		cause Cause
		other []Cause
		want  string
	}{
		{"no reason names no confidence", Cause{Metric: "lcp", Delta: 1000, Reasons: reasons()}, nil, ""},
		{"60% is high", Cause{Metric: "lcp", Delta: 1000, Reasons: reasons(400, 200)}, nil, ConfidenceHigh},
		{"just under 60% is medium", Cause{Metric: "lcp", Delta: 1000, Reasons: reasons(599)}, nil, ConfidenceMedium},
		{"30% is medium", Cause{Metric: "tbt", Delta: 1000, Reasons: reasons(300)}, nil, ConfidenceMedium},
		{"under 30% is low", Cause{Metric: "tbt", Delta: 1000, Reasons: reasons(299)}, nil, ConfidenceLow},
		{"CLS in its own unit", Cause{Metric: "cls", Delta: 0.3, Reasons: reasons(0.25)}, nil, ConfidenceHigh},
		{"a category's failing audits are the score", Cause{Metric: "seo", Delta: -10, Reasons: reasons(50)}, nil, ConfidenceHigh},
		{"only the largest change, nothing that explains it", Cause{Metric: "seo", Delta: -10, Reasons: []Reason{{Kind: ReasonLargestChange, Text: "x"}}}, nil, ConfidenceLow},
		{"performance follows its heaviest metric", Cause{Metric: "performance", Delta: -30, Reasons: []Reason{{Weight: 700, Text: "a"}}},
			[]Cause{{Metric: "lcp", Reasons: lcp.Reasons, Confidence: ConfidenceMedium}}, ConfidenceMedium},
	} {
		if got := confidenceOf(tc.cause, tc.other); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
