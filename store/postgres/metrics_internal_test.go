package postgres

import (
	"math"
	"testing"
)

// parseMetrics reads Postgres's text of a float8[12]: numbers in any float8 output form, NULL
// for a missing value, and nothing else.
func TestParseMetrics(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
		want [12]float64 // -1: NULL
	}{
		{"numbers and NULLs", "{87,100,NULL,95,2500.5,0.1234,NULL,1800,800,0,3400,7300.75}", true,
			[12]float64{87, 100, -1, 95, 2500.5, 0.1234, -1, 1800, 800, 0, 3400, 7300.75}},
		{"all NULL", "{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}", true,
			[12]float64{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
		{"exponents", "{1e+21,1e-05,1,1,1,1,1,1,1,1,1,1}", true, [12]float64{1e21, 1e-5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"eleven elements", "{1,1,1,1,1,1,1,1,1,1,1}", false, [12]float64{}},
		{"thirteen elements", "{1,1,1,1,1,1,1,1,1,1,1,1,1}", false, [12]float64{}},
		{"not an array", "1,1", false, [12]float64{}},
		{"empty", "", false, [12]float64{}},
		{"garbage element", "{1,x,1,1,1,1,1,1,1,1,1,1}", false, [12]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nums metricNums
			err := parseMetrics([]byte(tt.in), &nums)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
			if !tt.ok {
				return
			}
			for i, w := range tt.want {
				if w == -1 && nums[i].Valid || w != -1 && (!nums[i].Valid || math.Abs(nums[i].Float64-w) > 1e-12*math.Abs(w)) {
					t.Errorf("element %d = %+v, want %v", i, nums[i], w)
				}
			}
		})
	}
}
