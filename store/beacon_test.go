package store

import (
	"math"
	"sort"
	"testing"
)

// The bins tile each metric's range without gaps: every value lands in the bin whose bounds
// hold it, and the bin count is what bounds storage.
func TestBeaconBinsTileTheRange(t *testing.T) {
	for _, m := range FieldMetrics {
		n := BeaconBins(m)
		if n < 50 || n > 200 {
			t.Fatalf("%s: %d bins", m, n)
		}
		max, _ := BeaconRange(m)
		for _, v := range []float64{0, max / 1e9, max / 1e6, 0.5, 1, 1.1, 1.21, 2.5, 100, 2500, max / 2, max} {
			if v > max {
				continue
			}
			b := BeaconBin(m, v)
			start, end := BeaconBinBounds(m, b)
			if b < 0 || b >= n || v < start || (v >= end && b != n-1) {
				t.Errorf("%s %v: bin %d [%v, %v)", m, v, b, start, end)
			}
		}
		for _, v := range []float64{-1, max * 1.01, math.NaN(), math.Inf(1)} {
			if b := BeaconBin(m, v); b != -1 {
				t.Errorf("%s %v: bin %d, want -1 (refused)", m, v, b)
			}
		}
	}
	if BeaconBin("tbt", 1) != -1 || BeaconBins("tbt") != 0 {
		t.Error("an unknown metric has bins")
	}
}

// The p75 read from the bins is the nearest-rank 75th percentile of the samples, exact to a
// bin: the true value lies in the bin reported, and the figure is within 5% of it.
func TestBeaconP75(t *testing.T) {
	tests := []struct {
		name    string
		metric  string
		samples []float64
		weight  float64 // each sample's count (sampling scales it)
	}{
		{"one sample", "inp", []float64{180}, 1},
		{"four samples: the third", "lcp", []float64{1000, 2000, 3000, 4000}, 1},
		{"five samples: the fourth", "lcp", []float64{4000, 1000, 5000, 2000, 3000}, 1},
		{"a hundred samples", "ttfb", series(100, 10, 10), 1},
		{"sampled 1 in 8: the same p75", "ttfb", series(100, 10, 10), 8},
		{"CLS on its own scale", "cls", []float64{0, 0, 0.02, 0.1, 0.25, 0.31}, 1},
		{"all CLS zero", "cls", []float64{0, 0, 0}, 1},
		{"the top of the range", "inp", []float64{60_000, 60_000}, 1},
		{"sub-millisecond", "fcp", []float64{0.2, 0.4, 0.6, 0.9}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts := map[int]float64{}
			for _, v := range tt.samples {
				counts[BeaconBin(tt.metric, v)] += tt.weight
			}
			got, ok := BeaconP75(tt.metric, counts)
			if !ok {
				t.Fatal("no p75")
			}
			s := append([]float64(nil), tt.samples...)
			sort.Float64s(s)
			want := s[int(math.Ceil(0.75*float64(len(s))))-1]
			wantBin := BeaconBin(tt.metric, want)
			if b := BeaconBin(tt.metric, got); b != wantBin {
				t.Fatalf("p75 %v is in bin %d; the samples' p75 %v is in bin %d", got, b, want, wantBin)
			}
			if want >= 1 && math.Abs(got-want)/want > 0.1 {
				t.Fatalf("p75 %v, samples' %v: more than 10%% apart", got, want)
			}
		})
	}
	if _, ok := BeaconP75("lcp", nil); ok {
		t.Error("an empty histogram has a p75")
	}
	if _, ok := BeaconP75("lcp", map[int]float64{3: 0}); ok {
		t.Error("a histogram of zero counts has a p75")
	}
}

func series(n int, from, step float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from + step*float64(i)
	}
	return out
}

func TestBeaconKeysAndPaths(t *testing.T) {
	k := NewBeaconKey()
	if !ValidBeaconKey(k) || ValidBeaconKey(k+"x") || ValidBeaconKey("b_"+"%%%%%%%%%%%%%%%%") || NewBeaconKey() == k {
		t.Fatalf("key %q", k)
	}
	for _, tt := range []struct {
		page, path string
		ok         bool
	}{
		{"", "", true},
		{"https://shop.example/pricing", "/pricing", true},
		{"https://shop.example/", "/", true},
		{"https://shop.example", "", false},
		{"https://shop.example.evil/x", "", false},
		{"https://other.example/pricing", "", false},
	} {
		path, ok := BeaconPath("https://shop.example", tt.page)
		if path != tt.path || ok != tt.ok {
			t.Errorf("%q: %q %v", tt.page, path, ok)
		}
	}
}
