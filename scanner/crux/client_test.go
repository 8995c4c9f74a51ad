package crux_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/crux"
	"sitepulse/scanner/crux/cruxtest"
	"sitepulse/store"
)

const testKey = "AIzaSECRET-crux_key_0123456789abcdefghij"

var (
	now  = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC) // a Wednesday
	last = cruxtest.LastDate(now)                       // Saturday 2026-11-28
)

func newClient(d *cruxtest.Double, key string, budget int) *crux.Client {
	return crux.New(crux.Config{Endpoint: cruxtest.Endpoint, Key: key, HTTP: d.Client(), Budget: crux.NewBudget(budget),
		Now: func() time.Time { return now }})
}

var steady = cruxtest.Shape{Before: map[string]float64{"lcp": 2300, "inp": 170, "cls": 0.06, "fcp": 1500, "ttfb": 600}}

// TestLastDate: the newest period ends on the Saturday at least two days before now.
func TestLastDate(t *testing.T) {
	for _, tt := range []struct{ now, want string }{
		{"2026-12-02", "2026-11-28"}, // Wednesday
		{"2026-11-30", "2026-11-28"}, // Monday
		{"2026-11-29", "2026-11-21"}, // Sunday: Saturday was one day ago
		{"2026-12-05", "2026-11-28"}, // Saturday
	} {
		n, _ := time.Parse(time.DateOnly, tt.now)
		if got := cruxtest.LastDate(n.Add(10 * time.Hour)).Format(time.DateOnly); got != tt.want {
			t.Errorf("LastDate(%s) = %s, want %s", tt.now, got, tt.want)
		}
	}
}

// TestHistoryParsesTheAPIShapes: the client reads the double's answers, which take the API's
// shapes: 40 periods of five metrics, CLS as strings, gaps as a null or "NaN" p75 with "NaN"
// densities, 404 as no field data, 429 and 5xx as temporary errors, a missing key refused.
func TestHistoryParsesTheAPIShapes(t *testing.T) {
	gappy := steady
	gappy.Gaps, gappy.NaNGaps = []int{3, 4}, []int{30}
	changed := steady
	changed.After, changed.ChangeAt = map[string]float64{"lcp": 4000, "inp": 400}, last.AddDate(0, 0, -20)
	for _, tt := range []struct {
		name   string
		shape  *cruxtest.Shape
		page   string
		device store.FieldDevice
		setup  func(d *cruxtest.Double)
		key    string
		check  func(t *testing.T, rec store.CruxRecord, err error)
	}{
		{name: "an origin's 40 periods of five metrics", shape: &steady, device: store.FieldPhone, check: func(t *testing.T, rec store.CruxRecord, err error) {
			if err != nil || !rec.Found {
				t.Fatalf("found %v, err %v", rec.Found, err)
			}
			if len(rec.Points) != 40*5 {
				t.Fatalf("%d points, want 200", len(rec.Points))
			}
			first, lastPt := rec.Points[0], rec.Points[len(rec.Points)-1]
			if !first.Start.Equal(last.AddDate(0, 0, -7*39-27)) || !lastPt.End.Equal(last.AddDate(0, 0, 1)) || !lastPt.Start.Equal(last.AddDate(0, 0, -27)) {
				t.Errorf("periods from %v to %v (last starts %v), want 28-day windows ending %v", first.Start, lastPt.End, lastPt.Start, last)
			}
			for _, p := range rec.Points {
				if p.P75 == nil || len(p.Histogram) != 3 || p.Histogram[2].End != 0 || p.Page != "" || p.Device != store.FieldPhone || p.Source != store.FieldCrUX {
					t.Fatalf("point %+v: want a p75 and three bins, the last open-ended", p)
				}
				sum := p.Histogram[0].Count + p.Histogram[1].Count + p.Histogram[2].Count
				if sum < 0.999 || sum > 1.001 {
					t.Errorf("%s densities sum to %v", p.Metric, sum)
				}
				if p.Metric == "cls" && (*p.P75 != 0.06 || p.Histogram[1].Start != 0.1 || p.Histogram[1].End != 0.25) {
					t.Errorf("CLS (strings in the answer) read as p75 %v, bins %+v", *p.P75, p.Histogram)
				}
				if p.Metric == "lcp" && *p.P75 != 2300 {
					t.Errorf("LCP p75 %v, want 2300", *p.P75)
				}
			}
		}},
		{name: "gaps: a null and a \"NaN\" p75, \"NaN\" densities", shape: &gappy, page: "https://shop.test/pricing", device: store.FieldDesktop, check: func(t *testing.T, rec store.CruxRecord, err error) {
			if err != nil || !rec.Found {
				t.Fatalf("found %v, err %v", rec.Found, err)
			}
			gaps := 0
			for i, p := range rec.Points {
				period := i / 5
				gap := period == 3 || period == 4 || period == 30
				if gap != (p.P75 == nil) || gap != (p.Histogram == nil) {
					t.Errorf("period %d %s: p75 %v histogram %v", period, p.Metric, p.P75, p.Histogram)
				}
				if gap {
					gaps++
				}
				if p.Page != "https://shop.test/pricing" || p.Device != store.FieldDesktop {
					t.Errorf("point of %q %s", p.Page, p.Device)
				}
			}
			if gaps != 15 {
				t.Errorf("%d gap points, want 3 periods x 5 metrics", gaps)
			}
		}},
		{name: "a change shows over the 28-day windows after it", shape: &changed, device: store.FieldPhone, check: func(t *testing.T, rec store.CruxRecord, err error) {
			var lcp []float64
			for _, p := range rec.Points {
				if p.Metric == "lcp" {
					lcp = append(lcp, *p.P75)
				}
			}
			if lcp[0] != 2300 || lcp[35] != 2300 || !(lcp[37] > 2300 && lcp[38] > lcp[37] && lcp[39] > lcp[38] && lcp[39] <= 4000) {
				t.Errorf("LCP p75 over the last periods %v: want steady at 2300, then rising towards 4000", lcp[34:])
			}
		}},
		{name: "404: no field data, not an error", device: store.FieldPhone, page: "https://shop.test/quiet", check: func(t *testing.T, rec store.CruxRecord, err error) {
			if err != nil || rec.Found || len(rec.Points) != 0 || rec.Page != "https://shop.test/quiet" {
				t.Errorf("record %+v, err %v: want not found, no error", rec, err)
			}
		}},
		{name: "429 with Retry-After", shape: &steady, device: store.FieldPhone, setup: func(d *cruxtest.Double) { d.TooMany(1, "30") }, check: func(t *testing.T, rec store.CruxRecord, err error) {
			var api *crux.APIError
			if !errors.As(err, &api) || api.Status != 429 || !api.Temporary() || !api.After.Equal(now.Add(30*time.Second)) ||
				!strings.Contains(api.Reason, "RESOURCE_EXHAUSTED") {
				t.Errorf("err %#v, want a temporary 429 to retry 30 s later", err)
			}
		}},
		{name: "503", shape: &steady, device: store.FieldPhone, setup: func(d *cruxtest.Double) { d.Fail(1) }, check: func(t *testing.T, rec store.CruxRecord, err error) {
			var api *crux.APIError
			if !errors.As(err, &api) || api.Status != 503 || !api.Temporary() || api.KeyRefused() {
				t.Errorf("err %v, want a temporary 503", err)
			}
		}},
		{name: "no key: refused", shape: &steady, device: store.FieldPhone, key: "-", check: func(t *testing.T, rec store.CruxRecord, err error) {
			var api *crux.APIError
			if !errors.As(err, &api) || !api.KeyRefused() || api.Temporary() {
				t.Errorf("err %v, want the key refused", err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := cruxtest.New(last)
			target := "https://shop.test"
			if tt.page != "" {
				target = tt.page
			}
			if tt.shape != nil {
				d.Set(target, crux.FormFactor(tt.device), *tt.shape)
			}
			if tt.setup != nil {
				tt.setup(d)
			}
			key := testKey
			if tt.key == "-" {
				key = ""
			}
			rec, err := newClient(d, key, 100).History(context.Background(), crux.Query{Origin: "https://shop.test", Page: tt.page, Device: tt.device})
			tt.check(t, rec, err)
			if err != nil && strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the key is in the error: %v", err)
			}
			calls := d.Calls()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			c := calls[0]
			want := cruxtest.Call{Origin: "https://shop.test", FormFactor: crux.FormFactor(tt.device), Periods: 40, Key: key != "",
				Metrics: []string{"largest_contentful_paint", "interaction_to_next_paint", "cumulative_layout_shift", "first_contentful_paint", "experimental_time_to_first_byte"}}
			if tt.page != "" {
				want.Origin, want.URL = "", tt.page
			}
			if c.Origin != want.Origin || c.URL != want.URL || c.FormFactor != want.FormFactor || c.Periods != 40 || c.Key != want.Key || strings.Join(c.Metrics, ",") != strings.Join(want.Metrics, ",") {
				t.Errorf("request %+v, want %+v", c, want)
			}
		})
	}
}

// TestParseRecordedAnswer reads an answer written as the API documents it: numbers and
// numeric strings, a "NaN" density and a null p75, a metric without data left out.
func TestParseRecordedAnswer(t *testing.T) {
	answer := `{"record":{"key":{"origin":"https://shop.test","formFactor":"PHONE"},"metrics":{
		"largest_contentful_paint":{"histogramTimeseries":[
			{"start":0,"end":2500,"densities":[0.9,"NaN",0.8]},
			{"start":2500,"end":4000,"densities":[0.07,"NaN",0.12]},
			{"start":4000,"densities":[0.03,"NaN",0.08]}],
			"percentilesTimeseries":{"p75s":[1303,null,"2100"]}},
		"cumulative_layout_shift":{"histogramTimeseries":[
			{"start":"0.00","end":"0.10","densities":[0.95,"NaN",0.85]},
			{"start":"0.10","end":"0.25","densities":[0.03,"NaN",0.1]},
			{"start":"0.25","densities":[0.02,"NaN",0.05]}],
			"percentilesTimeseries":{"p75s":["0.01","NaN","0.05"]}},
		"some_future_metric":{"percentilesTimeseries":{"p75s":[1,2,3]}}},
		"collectionPeriods":[
			{"firstDate":{"year":2022,"month":12,"day":27},"lastDate":{"year":2023,"month":1,"day":23}},
			{"firstDate":{"year":2023,"month":1,"day":3},"lastDate":{"year":2023,"month":1,"day":30}},
			{"firstDate":{"year":2023,"month":1,"day":10},"lastDate":{"year":2023,"month":2,"day":6}}]}}`
	points, err := crux.Parse([]byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range points {
		v := "gap"
		if p.P75 != nil {
			v = strconv.FormatFloat(*p.P75, 'f', -1, 64)
		}
		got = append(got, p.Start.Format("2006-01-02")+" "+p.End.Format("01-02")+" "+p.Metric+" "+v)
		if (p.P75 == nil) != (p.Histogram == nil) {
			t.Errorf("%s %s: p75 %v, histogram %v", p.Start, p.Metric, p.P75, p.Histogram)
		}
	}
	want := []string{"2022-12-27 01-24 lcp 1303", "2022-12-27 01-24 cls 0.01", "2023-01-03 01-31 lcp gap", "2023-01-03 01-31 cls gap",
		"2023-01-10 02-07 lcp 2100", "2023-01-10 02-07 cls 0.05"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("points\n got %q\nwant %q", got, want)
	}
	for _, bad := range []string{`not json`, `{"record":{"collectionPeriods":[{"firstDate":{"year":0}}]}}`} {
		if _, err := crux.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) = nil error", bad)
		}
	}
}

// TestBudgetSpent: past CRUX_DAILY_REQUESTS a query is not sent and says until when.
func TestBudgetSpent(t *testing.T) {
	d := cruxtest.New(last)
	c := newClient(d, testKey, 1)
	if _, err := c.History(context.Background(), crux.Query{Origin: "https://shop.test", Device: store.FieldPhone}); err != nil {
		t.Fatal(err)
	}
	_, err := c.History(context.Background(), crux.Query{Origin: "https://shop.test", Device: store.FieldPhone})
	var spent *crux.BudgetSpent
	if !errors.As(err, &spent) || !spent.Until.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("err %v, want the budget spent until the next UTC day", err)
	}
	if n := len(d.Calls()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

// TestNotFoundIsTheAPIs: only the API's own 404 (NOT_FOUND) means no field data; a 404 page of
// a wrong CRUX_API_URL is an error that says so.
func TestNotFoundIsTheAPIs(t *testing.T) {
	wrong := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	c := crux.New(crux.Config{Endpoint: "http://crux.test/v1/wrong", Key: testKey, HTTP: &http.Client{Transport: handlerTransport{wrong}},
		Now: func() time.Time { return now }})
	rec, err := c.History(context.Background(), crux.Query{Origin: "https://shop.test", Device: store.FieldPhone})
	var api *crux.APIError
	if !errors.As(err, &api) || api.Status != 404 || rec.Found {
		t.Errorf("record %+v, err %v: want a 404 error", rec, err)
	}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, r)
	return w.Result(), nil
}

// TestKeyNeverInErrors: a transport failure quotes no key.
func TestKeyNeverInErrors(t *testing.T) {
	c := crux.New(crux.Config{Endpoint: "http://127.0.0.1:1/v1/records:queryHistoryRecord", Key: testKey,
		HTTP: &http.Client{Transport: failing{}}, Now: func() time.Time { return now }})
	_, err := c.History(context.Background(), crux.Query{Origin: "https://shop.test", Device: store.FieldPhone})
	if err == nil || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "key=") && !strings.Contains(err.Error(), "REDACTED") {
		t.Errorf("err %v: want a failure without the key", err)
	}
}

type failing struct{}

func (failing) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, errors.New("dial failed for " + r.URL.String())
}
