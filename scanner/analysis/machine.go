package analysis

import (
	"strconv"

	"sitepulse/store"
)

// SlowerRatio is the share of the earlier run's CPU benchmark index below which the later run
// counts as made on a slower machine: Lighthouse's own guidance is that benchmark indexes
// within about 15% of each other run comparably.
const SlowerRatio = 0.85

// SlowerMachine is what the regression text adds when after was run on a slower machine than
// before, as their runners' CPU benchmark indexes (store.PageResult.BenchmarkIndex) say: "seen
// on a slower machine (CPU benchmark index 812 against 1650 before)". Empty when either run has
// no index (made in-process) or after's machine was not slower.
func SlowerMachine(before, after store.PageResult) string {
	b, a := before.BenchmarkIndex, after.BenchmarkIndex
	if b <= 0 || a <= 0 || a >= b*SlowerRatio {
		return ""
	}
	return "seen on a slower machine (CPU benchmark index " + strconv.FormatFloat(a, 'f', 0, 64) + " against " +
		strconv.FormatFloat(b, 'f', 0, 64) + " before)"
}
