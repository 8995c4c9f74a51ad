package analysis

import (
	"testing"

	"sitepulse/store"
)

func run(perf *int, lcp *float64) store.PageResult {
	return store.PageResult{PagePath: "/", Strategy: "mobile", Scores: store.PageScores{Performance: perf}, CoreWebVitals: store.Vitals{LCP: lcp}}
}

func TestMedianRun(t *testing.T) {
	tests := []struct {
		name  string
		perfs []*int
		want  int
	}{
		{"no runs keep nothing", nil, -1},
		{"one run is its own median", []*int{ip(40)}, 0},
		{"a bad first run among two good ones keeps the first good one", []*int{ip(40), ip(90), ip(91)}, 1},
		{"the middle score wins whatever the order", []*int{ip(91), ip(40), ip(90)}, 2},
		{"three equal scores keep the earliest", []*int{ip(70), ip(70), ip(70)}, 0},
		{"a tie on the median keeps the earliest holding it", []*int{ip(90), ip(40), ip(90)}, 0},
		{"two runs keep the lower one", []*int{ip(90), ip(40)}, 1},
		{"two equal runs keep the earliest", []*int{ip(50), ip(50)}, 0},
		{"a run without a score counts as the lowest", []*int{nil, ip(80), ip(60)}, 2},
		{"five runs keep the third best", []*int{ip(10), ip(50), ip(30), ip(20), ip(40)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs []store.PageResult
			for _, p := range tt.perfs {
				runs = append(runs, run(p, nil))
			}
			if got := MedianRun(runs); got != tt.want {
				t.Errorf("MedianRun = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSuspect(t *testing.T) {
	tests := []struct {
		name           string
		previous, next store.PageResult
		want           bool
	}{
		{"a drop of 5 points is noise", run(ip(80), nil), run(ip(75), nil), false},
		{"a drop of 6 points is suspect", run(ip(80), nil), run(ip(74), nil), true},
		{"a rise is not suspect", run(ip(60), nil), run(ip(90), nil), false},
		{"LCP moving from good to needs improvement is suspect", run(ip(90), fp(2400)), run(ip(90), fp(2600)), true},
		{"LCP worse within the good band is not", run(ip(90), fp(1000)), run(ip(90), fp(2400)), false},
		{"LCP moving into a better band is not", run(ip(90), fp(4100)), run(ip(90), fp(3000)), false},
		{"a metric missing on either side is not compared", run(nil, fp(1000)), run(ip(10), nil), false},
		{"an accessibility drop is suspect too", store.PageResult{Scores: store.PageScores{Accessibility: ip(90)}}, store.PageResult{Scores: store.PageScores{Accessibility: ip(80)}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Suspect(tt.previous, tt.next); got != tt.want {
				t.Errorf("Suspect = %v, want %v", got, tt.want)
			}
		})
	}
}
