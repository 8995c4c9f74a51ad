package analysis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

func fv(v float64) *float64 { return &v }

// beaconDays are daily INP points on phones from start, one per value, each with n samples.
func beaconDays(start time.Time, n int64, values ...float64) []store.FieldPoint {
	out := make([]store.FieldPoint, len(values))
	for i, v := range values {
		d := start.AddDate(0, 0, i)
		out[i] = store.FieldPoint{Source: store.FieldBeacon, Device: store.FieldPhone, Metric: "inp", Start: d, End: d.AddDate(0, 0, 1), P75: fv(v), Samples: n}
	}
	return out
}

func TestFieldBandUsesTheMetricTable(t *testing.T) {
	for _, c := range []struct {
		metric string
		v      float64
		want   string
	}{
		{"inp", 200, RatingGood}, {"inp", 201, RatingNI}, {"inp", 500, RatingNI}, {"inp", 501, RatingPoor},
		{"lcp", 2500, RatingGood}, {"lcp", 4001, RatingPoor}, {"cls", 0.1, RatingGood}, {"cls", 0.11, RatingNI},
		{"ttfb", 900, RatingNI}, {"speedIndex", 9000, ""}, {"nope", 1, ""},
	} {
		if got := FieldBand(c.metric, c.v); got != c.want {
			t.Errorf("FieldBand(%s, %v) = %q, want %q", c.metric, c.v, got, c.want)
		}
	}
}

func TestHistogramP75IsExactToABin(t *testing.T) {
	for _, c := range []struct {
		name string
		bins []store.FieldBin
		want float64
		ok   bool
	}{
		{"empty", nil, 0, false},
		{"all zero", []store.FieldBin{{Start: 0, End: 100, Count: 0}}, 0, false},
		{"three quarters in the first bin", []store.FieldBin{{Start: 0, End: 200, Count: 75}, {Start: 200, End: 500, Count: 25}}, 200, true},
		{"just past the first bin", []store.FieldBin{{Start: 0, End: 200, Count: 74}, {Start: 200, End: 500, Count: 26}}, 500, true},
		{"CrUX densities", []store.FieldBin{{Start: 0, End: 200, Count: 0.5}, {Start: 200, End: 500, Count: 0.3}, {Start: 500, End: 0, Count: 0.2}}, 500, true},
		{"open-ended last bin answers its start", []store.FieldBin{{Start: 0, End: 200, Count: 0.1}, {Start: 200, End: 500, Count: 0.1}, {Start: 500, End: 0, Count: 0.8}}, 500, true},
		{"unsorted bins", []store.FieldBin{{Start: 500, End: 1000, Count: 10}, {Start: 0, End: 100, Count: 60}, {Start: 100, End: 500, Count: 30}}, 500, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := HistogramP75(c.bins)
			if got != c.want || ok != c.ok {
				t.Errorf("got %v %v, want %v %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestLabFieldDisagree(t *testing.T) {
	for _, c := range []struct {
		name       string
		metric     string
		lab, field *float64
		want       bool
	}{
		{"same band", "lcp", fv(2000), fv(2400), false},
		{"lab poor, field good", "lcp", fv(4200), fv(2100), true},
		{"lab good, field poor INP", "inp", fv(100), fv(600), true},
		{"no field value", "lcp", fv(4200), nil, false},
		{"no lab value", "lcp", nil, fv(4200), false},
		{"a metric without bands", "speedIndex", fv(1000), fv(9000), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, got := LabFieldDisagree(c.metric, c.lab, c.field)
			if got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if got && !strings.Contains(d.Text(), "lab says") {
				t.Errorf("text %q", d.Text())
			}
		})
	}
	d, _ := LabFieldDisagree("lcp", fv(4200), fv(2100))
	if got, want := d.Text(), "LCP: lab says poor (4.2 s), field says good (2.1 s)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

func TestFieldOfBeaconAppliesTheStatedRule(t *testing.T) {
	day0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)    // a Monday
	publish := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC) // Tuesday afternoon
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	r := DefaultFieldRule
	// Days 23 Nov .. 30 Nov are before (8 days: the latest 7 count), 1 Dec holds the publish,
	// 2 Dec on are after.
	calm := []float64{175, 180, 182, 178, 181, 179, 180, 183}
	for _, c := range []struct {
		name   string
		days   []store.FieldPoint
		status FieldStatus
		text   string
	}{
		{"felt: well beyond the spread", beaconDays(day0, 50, append(calm, 300, 420, 430)...),
			FieldFelt, "felt by users: INP p75 180 ms → 425 ms on phones since the publish of Tuesday"},
		{"not felt: within the spread", beaconDays(day0, 50, append(calm, 300, 184, 181)...),
			FieldNotFelt, "not felt by users: INP p75 180 ms → 183 ms on phones since the publish of Tuesday, within the day-to-day spread"},
		{"not felt: a rise smaller than 10% of the baseline on calm days", beaconDays(day0, 50, append([]float64{180, 180, 180, 180, 180, 180, 180, 180}, 300, 195, 195)...),
			FieldNotFelt, ""},
		{"not felt: noisy days before hide the rise", beaconDays(day0, 50, append([]float64{120, 300, 150, 280, 140, 290, 200, 310}, 200, 330, 330)...),
			FieldNotFelt, ""},
		{"waiting: too few samples after", append(beaconDays(day0, 50, calm...), beaconDays(day0.AddDate(0, 0, 9), 40, 420)...),
			FieldWaiting, "waiting for users: 40 of 100 beacon samples since the publish of Tuesday"},
		{"waiting: a thin day is left out", append(beaconDays(day0, 50, calm...), beaconDays(day0.AddDate(0, 0, 9), 19, 420, 430, 440, 450, 460, 470)...),
			FieldWaiting, ""},
		{"no data: two days before only", beaconDays(day0.AddDate(0, 0, 6), 500, 180, 180, 300, 420, 420),
			FieldNoData, ""},
		{"no data: none at all", nil, FieldNoData, ""},
		{"the publish day alone does not count either side", beaconDays(day0, 50, append(calm, 900)...), FieldWaiting, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := FieldOfBeacon("inp", store.FieldPhone, publish, c.days, now, r)
			if v.Status != c.status {
				t.Fatalf("status %q, want %q (%s)", v.Status, c.status, v.Text)
			}
			if c.text != "" && v.Text != c.text {
				t.Errorf("text %q, want %q", v.Text, c.text)
			}
		})
	}
	t.Run("another metric or device is not read", func(t *testing.T) {
		days := beaconDays(day0, 50, append(calm, 300, 420, 430)...)
		if v := FieldOfBeacon("inp", store.FieldDesktop, publish, days, now, r); v.Status != FieldNoData {
			t.Errorf("desktop: %q", v.Status)
		}
		if v := FieldOfBeacon("lcp", store.FieldPhone, publish, days, now, r); v.Status != FieldNoData {
			t.Errorf("lcp: %q", v.Status)
		}
	})
	t.Run("a publish more than a week ago is named by its date", func(t *testing.T) {
		v := FieldOfBeacon("inp", store.FieldPhone, publish, beaconDays(day0, 50, append(calm, 300, 420, 430)...), now.AddDate(0, 0, 10), r)
		if !strings.HasSuffix(v.Text, "since the publish of Tue 1 Dec") {
			t.Errorf("text %q", v.Text)
		}
	})
}

func TestFieldOfCruxFillsInOverItsWindow(t *testing.T) {
	publish := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	// Weekly periods ending on Saturdays: 10 Oct .. ; each covers the 28 days before its end.
	period := func(end time.Time, v *float64) store.FieldPoint {
		return store.FieldPoint{Source: store.FieldCrUX, Device: store.FieldPhone, Metric: "lcp", Start: end.AddDate(0, 0, -28), End: end, P75: v}
	}
	weeks := func(values ...*float64) []store.FieldPoint {
		out := make([]store.FieldPoint, len(values))
		for i, v := range values {
			out[i] = period(time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*i), v)
		}
		return out
	}
	// Periods end 10, 17, 24, 31 Oct (before), 7, 14, 21, 28 Nov, 5 Dec (after; 5 Dec is 32 days on).
	for _, c := range []struct {
		name   string
		points []store.FieldPoint
		status FieldStatus
		text   string
	}{
		{"no period before the publish", weeks()[:0], FieldNoData, ""},
		{"not yet seen: one period after, unchanged", weeks(fv(2000), fv(2050), fv(2020), fv(2000), fv(2010)), CruxNotYet,
			"not yet seen in the field: CrUX's 28-day window still holds days before the publish of Tue 3 Nov"},
		{"seen as the window fills", weeks(fv(2000), fv(2050), fv(2020), fv(2000), fv(2040), fv(2300), fv(2600)), CruxSeen,
			"seen in the field: CrUX LCP p75 2.0 s → 2.3 s on phones since the publish of Tue 3 Nov"},
		{"not seen after 28 days", weeks(fv(2000), fv(2050), fv(2020), fv(2000), fv(2040), fv(2030), fv(2060), fv(2010), fv(2020)), CruxNotSeen,
			"not seen in the field after 28 days: CrUX LCP p75 2.0 s → 2.0 s on phones"},
		{"a gap (NaN) is skipped", weeks(fv(2000), fv(2050), fv(2020), fv(2000), nil, fv(2600)), CruxSeen, ""},
		{"within a noisy spread is not seen", weeks(fv(1500), fv(2500), fv(1600), fv(2000), fv(2400), fv(2450)), CruxNotYet, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := FieldOfCrux("lcp", store.FieldPhone, publish, c.points, now, DefaultFieldRule)
			if v.Status != c.status {
				t.Fatalf("status %q, want %q (%s)", v.Status, c.status, v.Text)
			}
			if c.text != "" && v.Text != c.text {
				t.Errorf("text %q, want %q", v.Text, c.text)
			}
		})
	}
}

func TestFieldOnlyNamesTheSlowestInteraction(t *testing.T) {
	day0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	page := "https://example.test/pricing"
	slow := []store.Interaction{
		{Page: page, Device: store.FieldDesktop, Selector: "a.nav", EventType: "click", Count: 9, P75: 300},
		{Page: page, Device: store.FieldPhone, Selector: "button.plan-toggle", EventType: "click", Count: 7, P75: 440},
	}
	calm := []float64{170, 180, 175, 185, 180, 178, 182}
	for _, c := range []struct {
		name   string
		metric string
		days   []store.FieldPoint
		labSaw bool
		want   bool
		text   string
	}{
		{"INP crosses into needs improvement", "inp", beaconDays(day0, 60, append(calm, 420, 430)...), false, true,
			"INP p75 420 ms on /pricing: click on button.plan-toggle"},
		{"the lab saw it: not field-only", "inp", beaconDays(day0, 60, append(calm, 410, 430)...), true, false, ""},
		{"a rise inside the good band", "inp", beaconDays(day0, 60, append(calm, 195, 198)...), false, false, ""},
		{"one bad day is not two", "inp", beaconDays(day0, 60, append(calm, 180, 430)...), false, false, ""},
		{"too few samples in the recent days", "inp", beaconDays(day0, 30, append(calm, 410, 430)...), false, false, ""},
		{"too few days", "inp", beaconDays(day0, 60, 180, 180, 430, 430), false, false, ""},
		{"already poor stays poor", "inp", beaconDays(day0, 60, 600, 610, 620, 605, 615, 900, 950), false, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := FieldOnly(c.metric, page, store.FieldPhone, c.days, c.labSaw, slow, DefaultFieldRule)
			if ok != c.want {
				t.Fatalf("got %v (%+v), want %v", ok, got, c.want)
			}
			if c.text != "" && got.Text != c.text {
				t.Errorf("text %q, want %q", got.Text, c.text)
			}
		})
	}
	t.Run("the whole site's INP names the element's page", func(t *testing.T) {
		got, ok := FieldOnly("inp", "", store.FieldPhone, beaconDays(day0, 60, append(calm, 420, 430)...), false, slow, DefaultFieldRule)
		if !ok || got.Text != "INP p75 420 ms on the whole site: click on button.plan-toggle (/pricing)" {
			t.Errorf("got %v %q", ok, got.Text)
		}
	})
	t.Run("LCP names no interaction", func(t *testing.T) {
		days := beaconDays(day0, 60, 2000, 2100, 2050, 2000, 2080, 4500, 4700)
		for i := range days {
			days[i].Metric = "lcp"
		}
		got, ok := FieldOnly("lcp", page, store.FieldPhone, days, false, slow, DefaultFieldRule)
		if !ok || got.Interaction != nil || got.Text != "LCP p75 4.5 s on /pricing (phones)" {
			t.Errorf("got %v %+v", ok, got)
		}
	})
}

func TestPagePathOf(t *testing.T) {
	for in, want := range map[string]string{"": "the whole site", "https://x.test": "/", "https://x.test/pricing": "/pricing", "/a": "/a"} {
		if got := PagePathOf(in); got != want {
			t.Errorf("PagePathOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckFieldBudgets(t *testing.T) {
	day0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	beacon := beaconDays(day0, 50, 180, 420)
	thin := beaconDays(day0.AddDate(0, 0, 2), 5, 900) // too few samples: not the latest figure
	crux := []store.FieldPoint{{Source: store.FieldCrUX, Device: store.FieldPhone, Metric: "lcp", Start: day0, End: day0.AddDate(0, 0, 28), P75: fv(2700)},
		{Source: store.FieldCrUX, Device: store.FieldPhone, Metric: "inp", Start: day0, End: day0.AddDate(0, 0, 28), P75: fv(150)}}
	for _, c := range []struct {
		name    string
		budgets map[string]float64
		want    string
	}{
		{"none asked", nil, ""},
		{"the beacon's latest day wins over CrUX", map[string]float64{"inp": 200}, "inp 420>200 beacon"},
		{"within budget", map[string]float64{"inp": 500}, ""},
		{"CrUX when the beacon has no such metric", map[string]float64{"lcp": 2500}, "lcp 2700>2500 crux"},
		{"no figure breaks nothing", map[string]float64{"cls": 0.01}, ""},
		{"in FieldMetrics order", map[string]float64{"inp": 100, "lcp": 1000}, "lcp 2700>1000 crux;inp 420>100 beacon"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, v := range CheckFieldBudgets(c.budgets, store.FieldPhone, append(beacon, thin...), crux, DefaultFieldRule) {
				got = append(got, fmt.Sprintf("%s %v>%v %s", v.Metric, v.Actual, v.Threshold, v.Source))
			}
			if s := strings.Join(got, ";"); s != c.want {
				t.Errorf("got %q, want %q", s, c.want)
			}
		})
	}
}

// A field-only regression is named by the day it began (Since: the first of the recent days
// when it first held), which stays the same while it lasts, so an alert keyed on it is raised
// once; one that ends and comes back is a new one.
func TestFieldOnlySince(t *testing.T) {
	day0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	calm := []float64{170, 180, 175, 185, 180, 178, 182}
	for _, c := range []struct {
		name  string
		p75s  []float64
		since time.Time
	}{
		{"just crossed", append(calm, 420, 430), day0.AddDate(0, 0, 7)},
		{"lasting a day more", append(calm, 420, 430, 440), day0.AddDate(0, 0, 7)},
		{"ended and came back", append(calm, 420, 430, 180, 178, 181, 176, 179, 183, 177, 450, 460), day0.AddDate(0, 0, 16)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := FieldOnly("inp", "", store.FieldPhone, beaconDays(day0, 60, c.p75s...), false, nil, DefaultFieldRule)
			if !ok || !got.Since.Equal(c.since) {
				t.Fatalf("got %v since %v, want since %v", ok, got.Since, c.since)
			}
		})
	}
}

// CrUX's weekly periods are judged by the same rule with CruxFieldRule's numbers (no sample
// counts: CrUX gives none; a baseline of the 4 periods before): for a page with CrUX history and
// no beacon, the latest two periods crossing into a worse band is a field-only regression, named
// as CrUX's.
func TestFieldOnlyOnCrux(t *testing.T) {
	end := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	periods := func(vs ...float64) []store.FieldPoint {
		out := make([]store.FieldPoint, len(vs))
		for i, v := range vs {
			e := end.AddDate(0, 0, 7*(i-len(vs)+1))
			out[i] = store.FieldPoint{Source: store.FieldCrUX, Device: store.FieldPhone, Metric: "lcp", Start: e.AddDate(0, 0, -28), End: e, P75: fv(v)}
		}
		return out
	}
	got, ok := FieldOnly("lcp", "https://x.test/pricing", store.FieldPhone, periods(2000, 2100, 2050, 2080, 2700, 2900), false, nil, CruxFieldRule)
	if !ok || got.Source != store.FieldCrUX || got.Text != "LCP p75 2.7 s on /pricing (phones, CrUX)" || !got.Since.Equal(end.AddDate(0, 0, -7-28)) {
		t.Fatalf("got %v %+v", ok, got)
	}
	if _, ok := FieldOnly("lcp", "", store.FieldPhone, periods(2000, 2100, 2050, 2080, 2100, 2900), false, nil, CruxFieldRule); ok {
		t.Fatal("one crossed period is not two")
	}
	if _, ok := FieldOnly("lcp", "", store.FieldPhone, periods(2000, 2100, 2700, 2900), false, nil, CruxFieldRule); ok {
		t.Fatal("two periods before are too few")
	}
}

// TestFieldOnlyOn: the surfaces' rule takes the beacon's days of the device when there are any,
// else CrUX's periods (a site with CrUX history and no beacon on phones).
func TestFieldOnlyOn(t *testing.T) {
	end := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var crux []store.FieldPoint
	for i, v := range []float64{2000, 2100, 2050, 2080, 2700, 2900} {
		e := end.AddDate(0, 0, 7*(i-5))
		crux = append(crux, store.FieldPoint{Source: store.FieldCrUX, Device: store.FieldPhone, Metric: "lcp", Start: e.AddDate(0, 0, -28), End: e, P75: fv(v)})
	}
	// A steady beacon on phones: its days decide, and they show nothing.
	var beacon []store.FieldPoint
	for d := range 14 {
		s := end.AddDate(0, 0, d-14)
		beacon = append(beacon, store.FieldPoint{Source: store.FieldBeacon, Device: store.FieldPhone, Metric: "lcp", Start: s, End: s.AddDate(0, 0, 1), P75: fv(2000), Samples: 500})
	}
	desktopOnly := []store.FieldPoint{{Source: store.FieldBeacon, Device: store.FieldDesktop, Metric: "lcp", Start: end, End: end.AddDate(0, 0, 1), P75: fv(900), Samples: 500}}
	for _, tt := range []struct {
		name   string
		beacon []store.FieldPoint
		want   bool
		source store.FieldSource
	}{
		{"no beacon: CrUX's periods", nil, true, store.FieldCrUX},
		{"a beacon on desktops only: CrUX's periods for phones", desktopOnly, true, store.FieldCrUX},
		{"a steady beacon on phones decides", beacon, false, ""},
	} {
		got, ok := FieldOnlyOn("lcp", "https://x.test/pricing", store.FieldPhone, tt.beacon, crux, false, nil)
		if ok != tt.want || got.Source != tt.source {
			t.Errorf("%s: got %v %+v", tt.name, ok, got)
		}
	}
	if _, ok := FieldOnlyOn("lcp", "https://x.test/pricing", store.FieldPhone, nil, crux, true, nil); ok {
		t.Error("what the lab saw is not field-only")
	}
}
