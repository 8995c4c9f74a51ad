package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// fakeField serves beacon days and slow interactions of one page.
type fakeField struct {
	page string
	days []store.FieldPoint
	slow []store.Interaction
}

func (f fakeField) CruxSeriesOf(context.Context, string, store.FieldQuery) ([]store.FieldPoint, error) {
	return nil, nil
}

func (f fakeField) BeaconSeriesOf(_ context.Context, _ string, q store.FieldQuery) ([]store.FieldPoint, error) {
	var out []store.FieldPoint
	for _, d := range f.days {
		if q.Page == f.page && (q.Metric == "" || q.Metric == d.Metric) && !d.Start.Before(q.From) {
			out = append(out, d)
		}
	}
	return out, nil
}

func (f fakeField) SlowInteractionsOf(_ context.Context, _ string, q store.FieldQuery, _ int) ([]store.Interaction, error) {
	if q.Page != f.page {
		return nil, nil
	}
	return f.slow, nil
}

// TestFieldOnlyAlertsOnce: a field-only INP regression on a page raises field.regression with
// the slowest interaction named, once: the scan after it finds it already there and says
// nothing; the chat message and the e-mail read it.
func TestFieldOnlyAlertsOnce(t *testing.T) {
	day0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	page := "https://shop.test/pricing"
	var days []store.FieldPoint
	for i, v := range []float64{170, 180, 175, 185, 180, 178, 182, 420, 430} {
		p75 := v
		d := day0.AddDate(0, 0, i)
		days = append(days, store.FieldPoint{Source: store.FieldBeacon, Page: page, Device: store.FieldPhone, Metric: "inp", Start: d, End: d.AddDate(0, 0, 1), P75: &p75, Samples: 80})
	}
	f := fakeField{page: page, days: days, slow: []store.Interaction{{Page: page, Device: store.FieldPhone, Selector: "button.plan-toggle", EventType: "click", Count: 40, P75: 440}}}
	now := day0.AddDate(0, 0, 9).Add(6 * time.Hour)
	outcome := func(previous time.Time) Outcome {
		o := Outcome{Site: store.Site{ID: "s1", Name: "Shop", Domain: "shop.test"}, Scan: store.Scan{ID: "sc1", Status: store.StatusComplete},
			Latest: []store.PageResult{{PagePath: "/pricing", PageURL: page, Strategy: store.StrategyMobile}}}
		if err := fieldOutcome(context.Background(), f, &o, previous, now); err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := outcome(day0.AddDate(0, 0, 6)) // the previous scan: before the crossing
	if len(o.FieldOnly) != 1 || o.FieldOnly[0].Text != "INP p75 420 ms on /pricing: click on button.plan-toggle" {
		t.Fatalf("field-only %+v", o.FieldOnly)
	}
	events := Events(o, now, func() string { return "e" })
	if len(events) != 1 || events[0].Type != EventFieldRegression || len(events[0].Data.FieldOnly) != 1 {
		t.Fatalf("events %+v", events)
	}
	subject, body := Email(events[0])
	if !strings.Contains(subject, "1 field-only regression on Shop") || !strings.Contains(body, "INP p75 420 ms on /pricing: click on button.plan-toggle (was 180 ms)") {
		t.Errorf("e-mail %q\n%s", subject, body)
	}
	for _, kind := range []string{store.ChannelSlack, store.ChannelTeams, store.ChannelDiscord, store.ChannelWebhook} {
		b, _, err := Render(kind, events[0], []byte("k"), now)
		if err != nil || !strings.Contains(string(b), "button.plan-toggle") {
			t.Errorf("%s: %v %s", kind, err, b)
		}
	}
	if o := outcome(now.Add(-time.Hour)); len(o.FieldOnly) != 0 { // the previous scan saw it already
		t.Errorf("alerted again: %+v", o.FieldOnly)
	}
	if o := outcome(time.Time{}); len(o.FieldOnly) != 1 { // the site's first scan
		t.Errorf("first scan: %+v", o.FieldOnly)
	}
	// The lab saw INP regress on the page: not field-only.
	o = Outcome{Site: store.Site{ID: "s1"}, Scan: store.Scan{Status: store.StatusComplete},
		Previous: []store.PageResult{{PagePath: "/pricing", PageURL: page, Strategy: store.StrategyMobile, CoreWebVitals: store.Vitals{INP: fptr(150)}}},
		Latest:   []store.PageResult{{PagePath: "/pricing", PageURL: page, Strategy: store.StrategyMobile, CoreWebVitals: store.Vitals{INP: fptr(450)}}}}
	if err := fieldOutcome(context.Background(), f, &o, time.Time{}, now); err != nil || len(o.FieldOnly) != 0 {
		t.Errorf("the lab saw it: %v %+v", err, o.FieldOnly)
	}
}

func fptr(v float64) *float64 { return &v }

// TestRegressionCarriesFieldStatus: regression.confirmed carries the field status of its
// regressions in its body and its lines; without field data the body has no field key.
func TestRegressionCarriesFieldStatus(t *testing.T) {
	o := Outcome{Site: store.Site{Name: "Shop"}, Scan: store.Scan{ID: "sc1", Status: store.StatusComplete},
		Previous: []store.PageResult{{PagePath: "/", Strategy: store.StrategyMobile, CoreWebVitals: store.Vitals{CLS: fptr(0.01)}}},
		Latest:   []store.PageResult{{PagePath: "/", Strategy: store.StrategyMobile, CoreWebVitals: store.Vitals{CLS: fptr(0.4)}}}}
	b, _, _ := Render(store.ChannelWebhook, Events(o, time.Now(), func() string { return "e" })[0], []byte("k"), time.Now())
	if strings.Contains(string(b), `"field"`) {
		t.Errorf("a body without field data has a field key: %s", b)
	}
	o.Field = []analysis.FieldVerdict{{Source: store.FieldBeacon, Status: analysis.FieldFelt, Metric: "cls", Device: store.FieldPhone,
		Text: "felt by users: CLS p75 0.03 → 0.24 on phones since the publish of Friday"}}
	e := Events(o, time.Now(), func() string { return "e" })[0]
	_, body := Email(e)
	if !strings.Contains(body, "Field (beacon): felt by users: CLS p75 0.03 → 0.24 on phones since the publish of Friday") {
		t.Errorf("e-mail:\n%s", body)
	}
	b, _, _ = Render(store.ChannelWebhook, e, []byte("k"), time.Now())
	if !strings.Contains(string(b), `"field":[{"source":"beacon","status":"felt"`) {
		t.Errorf("webhook body: %s", b)
	}
	if got := withField("Digest\n\nScan x, compared with scan y.\n", o); !strings.Contains(got, "What real users measured:\n  CLS (phone, beacon): felt by users") ||
		!strings.HasSuffix(got, "\nScan x, compared with scan y.\n") {
		t.Errorf("digest:\n%s", got)
	}
}
