package demo

import (
	"context"
	"testing"
	"time"

	"sitepulse/scanner/crux"
	"sitepulse/store"
)

// TestCruxDoubleTellsTheFieldStory: the demo's CrUX history has 40 weekly periods for the
// origin and its pages, phones' LCP and INP rising after FieldChangeAt on the origin, the
// pricing page's gaps, and no field data for NoFieldPath.
func TestCruxDoubleTellsTheFieldStory(t *testing.T) {
	now := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	d := CruxDouble(now)
	c := crux.New(crux.Config{Endpoint: "http://crux.test/v1/records:queryHistoryRecord", Key: "demo", HTTP: d.Client(), Now: func() time.Time { return now }})
	ctx := context.Background()
	origin := "https://" + Domain
	p75s := func(page string, device store.FieldDevice, metric string) []*float64 {
		rec, err := c.History(ctx, crux.Query{Origin: origin, Page: page, Device: device})
		if err != nil || !rec.Found {
			t.Fatalf("%q %s: found %v, err %v", page, device, rec.Found, err)
		}
		var out []*float64
		for _, p := range rec.Points {
			if p.Metric == metric {
				out = append(out, p.P75)
			}
		}
		if len(out) != 40 {
			t.Fatalf("%q %s %s: %d periods, want 40", page, device, metric, len(out))
		}
		return out
	}
	for _, m := range []string{"lcp", "inp"} {
		s := p75s("", store.FieldPhone, m)
		if first, lastV := *s[0], *s[39]; lastV < first*1.25 {
			t.Errorf("origin phone %s p75 %v then %v: want a visible rise after the change", m, first, lastV)
		}
		if *s[30] != *s[0] {
			t.Errorf("origin phone %s moved before the change: %v, %v", m, *s[0], *s[30])
		}
	}
	gaps := 0
	for _, v := range p75s(origin+"/pricing", store.FieldPhone, "lcp") {
		if v == nil {
			gaps++
		}
	}
	if gaps != 3 {
		t.Errorf("pricing page: %d gaps, want 3", gaps)
	}
	// Every page of the demo site has field data on both devices, but NoFieldPath.
	runs, err := LatestRuns(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pathsOf(runs) {
		for _, device := range []store.FieldDevice{store.FieldPhone, store.FieldDesktop} {
			rec, err := c.History(ctx, crux.Query{Origin: origin, Page: origin + path, Device: device})
			if err != nil || rec.Found != (path != NoFieldPath) {
				t.Errorf("%s %s: found %v (err %v)", path, device, rec.Found, err)
			}
		}
	}
	rec, err := c.History(ctx, crux.Query{Origin: origin, Page: origin + NoFieldPath, Device: store.FieldPhone})
	if err != nil || rec.Found {
		t.Errorf("%s: found %v, err %v; want no field data", NoFieldPath, rec.Found, err)
	}
	if got := FieldChangeAt(now); !got.Equal(time.Date(2026, 11, 8, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("FieldChangeAt = %v", got)
	}
}
