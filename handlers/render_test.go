package handlers

import "testing"

func TestFormatVital(t *testing.T) {
	for _, tt := range []struct {
		metric string
		v      float64
		want   string
	}{
		{"lcp", 8304.6, "8.3 s"}, {"lcp", 999.4, "999 ms"}, {"ttfb", 3, "3 ms"}, {"cls", 0.3896, "0.39"}, {"cls", 0, "0.00"}, {"tbt", 1000, "1.0 s"},
	} {
		if got := formatVital(tt.metric, tt.v); got != tt.want {
			t.Errorf("formatVital(%s, %v) = %q, want %q", tt.metric, tt.v, got, tt.want)
		}
	}
	f := templateFuncs["vitalClass"].(func(string, *float64) string)
	v := 2600.0
	if got := f("lcp", &v); got != "ni" {
		t.Errorf("vitalClass(lcp, 2600) = %q", got)
	}
	if got := f("speedIndex", &v); got != "none" {
		t.Errorf("vitalClass(speedIndex) = %q", got)
	}
}
