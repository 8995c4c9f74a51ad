package svg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// num writes what fmt's %.1f writes, ".0" left out, for every kind of coordinate (it writes with
// strconv, without fmt's cost: the site page's charts call it for every point).
func TestNumIsFormatsOneDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200000 {
		f := []float64{r.Float64() * 1000, r.NormFloat64() * 50, float64(r.IntN(2000)) / 20, -0.05, 0.05, 0.15, 0.25, -0.04, math.Inf(1), math.NaN(), 0}[min(i%11, 10)]
		if i%11 < 3 {
			f = []float64{r.Float64() * 1000, r.NormFloat64() * 50, float64(r.IntN(2000)) / 20}[i%11]
		}
		if want := strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0"); num(f) != want {
			t.Fatalf("num(%v) = %q, want %q", f, num(f), want)
		}
	}
}
