package analysis_test

import (
	"strings"
	"testing"

	"sitepulse/scanner/analysis"
)

// The regression text of a run made on a slower runner says so; on a machine of the same
// class, or with runs made in-process (no index), it says nothing of machines.
func TestCompareSaysASlowerMachine(t *testing.T) {
	for _, tt := range []struct {
		name          string
		before, after float64
		slower        bool
	}{
		{"in-process runs", 0, 0, false},
		{"the same machine class", 1650, 1600, false},
		{"a slower runner", 1650, 812, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, a := run(t, "psi-before", "home.mobile"), run(t, "psi", "home.mobile")
			b.BenchmarkIndex, a.BenchmarkIndex = tt.before, tt.after
			c := analysis.Compare(b, a)
			if len(c.Causes) == 0 {
				t.Fatal("the demo's home page did not regress")
			}
			if got := strings.Contains(c.Summary, "seen on a slower machine (CPU benchmark index 812 against 1650 before)"); got != tt.slower || (c.Machine != "") != tt.slower {
				t.Errorf("summary %q, machine %q: want slower %v", c.Summary, c.Machine, tt.slower)
			}
		})
	}
}
