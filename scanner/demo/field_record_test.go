package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

var update = flag.Bool("update", false, "rewrite testdata/field/demo.json from the recording program")

// recordField is the program that recorded the demo's field story: real-user samples drawn from
// log-normal distributions (the shape web vitals take) with a fixed seed, so every run writes the
// same file, and each day's p75 taken from its samples as the beacon takes it. Day 0 is the day
// of the publish; the demo's "now" is day 2, part way through it. CrUX periods end every 7 days
// up to the day before the publish (none yet holds a day after it); the beacon has 28 days
// before it and the days since.
func recordField() FieldRecording {
	rng := rand.New(rand.NewPCG(45, 2026))
	round := func(metric string, v float64) float64 {
		if metric == "cls" {
			return math.Round(v*1000) / 1000
		}
		return math.Round(v)
	}
	// p75Of draws n samples around median (log-normal, spread sigma) and returns their p75.
	p75Of := func(n int, median, sigma float64) float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = median * math.Exp(sigma*rng.NormFloat64())
		}
		sort.Float64s(s)
		return s[int(math.Ceil(0.75*float64(n)))-1]
	}
	rec := FieldRecording{About: "The demo site's field data, written by TestFieldRecording (scanner/demo/field_record_test.go) with -update: " +
		"days counted from the day of the demo's publish. Not measured on a real site: drawn with a fixed seed to tell the demo's story."}
	type story struct {
		path          string
		device        store.FieldDevice
		metric        string
		before, after float64 // the medians before the publish and from the day after it
		sigma         float64
		perDay        int // beacon samples on a full day
		cruxWeeks     int // weekly CrUX periods recorded
		cruxDrift     float64
		cruxGap       int // a period with no p75 (CrUX's "NaN"), counted back from the latest; 0 none
	}
	stories := []story{
		// The whole site on phones: LCP good in the field however slow the lab's worst page,
		// INP near its good bound, CLS a little worse since the publish.
		{"", store.FieldPhone, "lcp", 1700, 1750, 0.45, 900, 40, 0.004, 12},
		{"", store.FieldPhone, "inp", 120, 150, 0.55, 700, 40, 0.002, 12},
		{"", store.FieldPhone, "cls", 0.02, 0.06, 0.7, 900, 40, 0.001, 12},
		{"", store.FieldDesktop, "lcp", 1100, 1120, 0.4, 500, 40, 0.003, 0},
		{"", store.FieldDesktop, "inp", 60, 64, 0.5, 400, 40, 0.001, 0},
		{"", store.FieldDesktop, "cls", 0.01, 0.03, 0.7, 500, 40, 0.001, 0},
		// The home page: the publish's layout shift is felt on phones.
		{"/", store.FieldPhone, "cls", 0.02, 0.16, 0.6, 320, 12, 0.001, 0},
		{"/", store.FieldPhone, "lcp", 1600, 1640, 0.45, 320, 12, 0.003, 0},
		{"/", store.FieldPhone, "inp", 90, 95, 0.5, 250, 12, 0.002, 0},
		// The pricing page: its lab LCP regression is not felt (a warm CDN), but a button
		// became slow to answer (field-only INP).
		{"/pricing", store.FieldPhone, "lcp", 1900, 1930, 0.45, 260, 12, 0.003, 0},
		{"/pricing", store.FieldPhone, "inp", 120, 290, 0.5, 240, 12, 0.002, 0},
		{"/pricing", store.FieldPhone, "cls", 0.01, 0.012, 0.6, 260, 12, 0.001, 0},
	}
	for _, s := range stories {
		for d := -28; d <= 2; d++ {
			n, median := s.perDay, s.before
			switch {
			case d == 0: // the publish's day: half before it, half after
				if rng.IntN(2) == 0 {
					median = (s.before + s.after) / 2
				}
			case d > 0:
				median = s.after
			}
			if d == 2 {
				n = n * 2 / 5 // today, part way through
			}
			n += rng.IntN(n/5+1) - n/10
			v := round(s.metric, p75Of(n, median, s.sigma))
			rec.Points = append(rec.Points, RecordedPoint{Source: store.FieldBeacon, Path: s.path, Device: s.device, Metric: s.metric, Day: d, P75: &v, Samples: int64(n)})
		}
		// CrUX: the p75 of 28 days of many users, drifting slowly down (the site got faster
		// over the months), the latest period ending the day before the publish.
		for w := s.cruxWeeks - 1; w >= 0; w-- {
			day := -1 - 7*w
			if s.cruxGap > 0 && w == s.cruxGap {
				rec.Points = append(rec.Points, RecordedPoint{Source: store.FieldCrUX, Path: s.path, Device: s.device, Metric: s.metric, Day: day})
				continue
			}
			v := round(s.metric, p75Of(4000, s.before*(1+s.cruxDrift*float64(w)), s.sigma))
			rec.Points = append(rec.Points, RecordedPoint{Source: store.FieldCrUX, Path: s.path, Device: s.device, Metric: s.metric, Day: day, P75: &v})
		}
	}
	// The slowest interactions: which element was the INP, how often since the beacon started,
	// the p75 of those interactions and its phases (drawn; the phases sum to the p75).
	slow := []struct {
		path, selector, event string
		count                 int64
		median                float64
		split                 [3]float64 // input delay, processing, presentation shares
	}{
		{"/pricing", "button.plan-toggle", "click", 212, 310, [3]float64{0.08, 0.78, 0.14}},
		{"/pricing", "a.cta-trial", "click", 64, 150, [3]float64{0.2, 0.5, 0.3}},
		{"/", "button.menu-toggle", "click", 58, 80, [3]float64{0.25, 0.45, 0.3}},
		{"/pricing", "input#seats", "keydown", 31, 130, [3]float64{0.3, 0.4, 0.3}},
		{"/", "div.chat-launcher > button", "pointerup", 19, 170, [3]float64{0.15, 0.6, 0.25}},
	}
	for _, s := range slow {
		p := round("inp", p75Of(int(s.count), s.median, 0.35))
		rec.Interactions = append(rec.Interactions, RecordedInteraction{Path: s.path, Device: store.FieldPhone, Selector: s.selector, EventType: s.event,
			Count: s.count, P75: p, Input: math.Round(p * s.split[0]), Process: math.Round(p * s.split[1]), Present: p - math.Round(p*s.split[0]) - math.Round(p*s.split[1]), Day: 2})
	}
	return rec
}

// TestFieldRecording keeps testdata/field/demo.json what the recording program writes (run with
// -update to rewrite it), and proves the story it tells by the rules the surfaces apply.
func TestFieldRecording(t *testing.T) {
	rec := recordField()
	b, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	const path = "../../" + FieldFile
	if *update {
		if err := os.MkdirAll("../../testdata/field", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("%s is not what the recording program writes: go test ./scanner/demo -run TestFieldRecording -update", FieldFile)
	}

	loaded, err := LoadField(os.DirFS("../.."))
	if err != nil {
		t.Fatal(err)
	}
	publish := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
	now := publish.Add(50 * time.Hour)
	f := NewField(loaded, "demo", publish, nil, nil, nil)
	ctx := context.Background()
	read := func(src store.FieldSource, page, metric string) []store.FieldPoint {
		q := store.FieldQuery{Page: page, Device: store.FieldPhone, Metric: metric}
		var ps []store.FieldPoint
		if src == store.FieldCrUX {
			ps, err = f.CruxSeriesOf(ctx, "demo", q)
		} else {
			ps, err = f.BeaconSeriesOf(ctx, "demo", q)
		}
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	home, pricing := "https://"+Domain+"/", "https://"+Domain+"/pricing"
	for _, c := range []struct {
		name   string
		got    analysis.FieldVerdict
		status analysis.FieldStatus
	}{
		{"the home page's CLS regression is felt", analysis.FieldOfBeacon("cls", store.FieldPhone, publish, read(store.FieldBeacon, home, "cls"), now, analysis.DefaultFieldRule), analysis.FieldFelt},
		{"the pricing page's LCP regression is not", analysis.FieldOfBeacon("lcp", store.FieldPhone, publish, read(store.FieldBeacon, pricing, "lcp"), now, analysis.DefaultFieldRule), analysis.FieldNotFelt},
		{"CrUX has not seen it yet", analysis.FieldOfCrux("cls", store.FieldPhone, publish, read(store.FieldCrUX, home, "cls"), now, analysis.DefaultFieldRule), analysis.CruxNotYet},
	} {
		if c.got.Status != c.status {
			t.Errorf("%s: %q, want %q (%s)", c.name, c.got.Status, c.status, c.got.Text)
		} else {
			t.Logf("%s: %s", c.name, c.got.Text)
		}
	}
	slow, _ := f.SlowInteractionsOf(ctx, "demo", store.FieldQuery{Page: pricing}, 10)
	fr, ok := analysis.FieldOnly("inp", pricing, store.FieldPhone, read(store.FieldBeacon, pricing, "inp"), false, slow, analysis.DefaultFieldRule)
	if !ok || fr.Interaction == nil || fr.Interaction.Selector != "button.plan-toggle" {
		t.Errorf("the pricing page's INP should be a field-only regression naming button.plan-toggle: %v %+v", ok, fr)
	} else {
		t.Logf("field-only: %s", fr.Text)
	}
	if crux := read(store.FieldCrUX, "", "lcp"); len(crux) != 40 || crux[len(crux)-1].End.After(publish) {
		t.Errorf("the origin's CrUX LCP: %d periods, want 40 ending before the publish", len(crux))
	}
}
