package analysis

import "sitepulse/store"

// Suspect answers whether a page's audit regressed against the same page and strategy of the
// previous completed scan, by the rules the regression report uses (a category score down more
// than 5 points, or a Core Web Vital crossing into a worse band). A suspect run is audited again
// before it is believed: Lighthouse lab scores move by several points on an unchanged page.
func Suspect(previous, latest store.PageResult) bool {
	previous.PagePath, previous.Strategy = latest.PagePath, latest.Strategy
	return len(Regressions([]store.PageResult{previous}, []store.PageResult{latest})) > 0
}

// MedianRun picks the run to keep among audits of one page and strategy (Lighthouse CI's
// numberOfRuns median): the run whose performance score is the median, the lower middle one for
// an even count, ties going to the earliest run. A run without a performance score counts as
// the lowest. It returns -1 for no runs.
func MedianRun(runs []store.PageResult) int {
	if len(runs) == 0 {
		return -1
	}
	perf := func(r store.PageResult) int {
		if r.Scores.Performance == nil {
			return -1
		}
		return *r.Scores.Performance
	}
	// The median value is the one with (n-1)/2 runs strictly below it and at least as many
	// at or above it; the earliest run holding it is kept.
	want := (len(runs) - 1) / 2
	for i, r := range runs {
		below, atOrBelow := 0, 0
		for _, o := range runs {
			switch {
			case perf(o) < perf(r):
				below++
				atOrBelow++
			case perf(o) == perf(r):
				atOrBelow++
			}
		}
		if below <= want && want < atOrBelow {
			return i
		}
	}
	return 0 // unreachable: some value always holds the middle rank
}
