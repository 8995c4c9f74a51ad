package analysis

import (
	"testing"

	"sitepulse/store"
)

func TestSlowerMachine(t *testing.T) {
	for _, tt := range []struct {
		name          string
		before, after float64
		want          string
	}{
		{"both in-process", 0, 0, ""},
		{"before in-process", 0, 800, ""},
		{"after in-process", 1600, 0, ""},
		{"same machine class", 1600, 1500, ""},
		{"just within 15%", 1000, 850, ""},
		{"slower", 1650, 812, "seen on a slower machine (CPU benchmark index 812 against 1650 before)"},
		{"faster", 800, 1650, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := SlowerMachine(store.PageResult{BenchmarkIndex: tt.before}, store.PageResult{BenchmarkIndex: tt.after})
			if got != tt.want {
				t.Errorf("SlowerMachine(%v, %v) = %q, want %q", tt.before, tt.after, got, tt.want)
			}
		})
	}
}
