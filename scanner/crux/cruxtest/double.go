// Package cruxtest is a double of the CrUX History API (records:queryHistoryRecord) with the
// API's real shapes: numbers as JSON numbers and CLS as strings, ineligible periods as a null
// (or "NaN") p75 with "NaN" densities, 404 NOT_FOUND for an origin or page without data, 429
// RESOURCE_EXHAUSTED when told. The tests use it, and so does the offline demo (scanner/demo),
// in process: it needs no socket.
package cruxtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Endpoint is the double's address: any host does, its client answers in process.
const Endpoint = "http://crux.test/v1/records:queryHistoryRecord"

// Shape is the history of one record (an origin or a page, on one form factor): each metric's
// p75 before a change and after it. A 28-day collection period that straddles the change mixes
// the two as real users' visits do, so its p75 and densities move over four weeks.
type Shape struct {
	// Before and After are each metric's p75 by SitePulse's name (lcp, inp, cls, fcp, ttfb);
	// a metric missing from Before is missing from the answer, as the API leaves out a metric
	// without data. After defaults to Before.
	Before, After map[string]float64
	// ChangeAt is the day the change reached users; zero: none.
	ChangeAt time.Time
	// Gaps are the indexes (0 the oldest) of ineligible periods: p75 null, densities "NaN".
	Gaps []int
	// NaNGaps are ineligible periods whose p75 is the string "NaN" instead of null.
	NaNGaps []int
}

// Call is one request the double was sent.
type Call struct {
	Origin, URL, FormFactor string
	Metrics                 []string
	Periods                 int
	// Key is whether the request carried a key= parameter (its value is never kept).
	Key bool
}

// Double answers queryHistoryRecord. Its zero value is not usable: use New.
type Double struct {
	mu      sync.Mutex
	last    time.Time // the newest period's lastDate
	records map[string]Shape
	tooMany int
	after   string
	fail    int
	calls   []Call
}

// New is a double whose newest collection period ends on lastDate (a Saturday, as the API's
// do; see LastDate).
func New(lastDate time.Time) *Double {
	y, m, d := lastDate.UTC().Date()
	return &Double{last: time.Date(y, m, d, 0, 0, 0, 0, time.UTC), records: map[string]Shape{}}
}

// LastDate is the lastDate of the newest period the API serves at now: the API publishes a
// period each Monday, ending on the Saturday before.
func LastDate(now time.Time) time.Time {
	y, m, d := now.UTC().Add(-48 * time.Hour).Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return day.AddDate(0, 0, -((int(day.Weekday()) + 1) % 7)) // back to Saturday
}

// SetLast moves the newest period's lastDate (a week later: a new period is published).
func (d *Double) SetLast(lastDate time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	y, m, day := lastDate.UTC().Date()
	d.last = time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
}

// Set serves s for target (an origin, or a page URL) on formFactor ("PHONE", "DESKTOP").
func (d *Double) Set(target, formFactor string, s Shape) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records[target+" "+formFactor] = s
}

// TooMany answers the next n requests 429 RESOURCE_EXHAUSTED, with Retry-After retryAfter
// when it is not empty.
func (d *Double) TooMany(n int, retryAfter string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tooMany, d.after = n, retryAfter
}

// Fail answers the next n requests 503 UNAVAILABLE.
func (d *Double) Fail(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = n
}

// Calls are the requests received, in order.
func (d *Double) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.calls...)
}

// Client calls the double in process.
func (d *Double) Client() *http.Client { return &http.Client{Transport: inProcess{d}} }

func apiError(w http.ResponseWriter, code int, status, message string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": message, "status": status}})
}

func (d *Double) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Origin                string   `json:"origin"`
		URL                   string   `json:"url"`
		FormFactor            string   `json:"formFactor"`
		Metrics               []string `json:"metrics"`
		CollectionPeriodCount int      `json:"collectionPeriodCount"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil || (req.Origin == "") == (req.URL == "") {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, Call{Origin: req.Origin, URL: req.URL, FormFactor: req.FormFactor, Metrics: req.Metrics,
		Periods: req.CollectionPeriodCount, Key: r.URL.Query().Get("key") != ""})
	switch {
	case r.URL.Query().Get("key") == "":
		apiError(w, http.StatusForbidden, "PERMISSION_DENIED", "The request is missing a valid API key.")
		return
	case d.tooMany > 0:
		d.tooMany--
		if d.after != "" {
			w.Header().Set("Retry-After", d.after)
		}
		apiError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'chromeuxreport.googleapis.com'.")
		return
	case d.fail > 0:
		d.fail--
		apiError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "The service is currently unavailable.")
		return
	}
	target := req.Origin
	if req.URL != "" {
		target = req.URL
	}
	s, ok := d.records[target+" "+req.FormFactor]
	if !ok {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "chrome ux report data not found")
		return
	}
	n := req.CollectionPeriodCount
	if n <= 0 {
		n = 25 // the API's default
	}
	if n > 40 {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "collectionPeriodCount must be between 1 and 40")
		return
	}
	key := map[string]string{"formFactor": req.FormFactor}
	if req.URL != "" {
		key["url"] = req.URL
	} else {
		key["origin"] = req.Origin
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(map[string]any{"record": record(key, s, d.last, n, req.Metrics)})
}

// metric is how the double draws one metric: the API's name, its histogram's bin edges, and
// the spread of its log-normal values.
type metric struct {
	api   string
	edges []float64
	sigma float64
	cls   bool // numbers as strings, as the API gives CLS
}

var metrics = map[string]metric{
	"lcp":  {"largest_contentful_paint", []float64{0, 2500, 4000}, 0.55, false},
	"inp":  {"interaction_to_next_paint", []float64{0, 200, 500}, 0.7, false},
	"cls":  {"cumulative_layout_shift", []float64{0, 0.1, 0.25}, 1.1, true},
	"fcp":  {"first_contentful_paint", []float64{0, 1800, 3000}, 0.5, false},
	"ttfb": {"experimental_time_to_first_byte", []float64{0, 800, 1800}, 0.6, false},
}

type date struct {
	Year  int `json:"year"`
	Month int `json:"month"`
	Day   int `json:"day"`
}

func dateOf(t time.Time) date { return date{t.Year(), int(t.Month()), t.Day()} }

// record builds the API's record of s over the n periods ending on last.
func record(key map[string]string, s Shape, last time.Time, n int, asked []string) map[string]any {
	type period struct{ first, last time.Time }
	periods := make([]period, n)
	cps := make([]map[string]date, n)
	for i := range periods {
		l := last.AddDate(0, 0, -7*(n-1-i))
		periods[i] = period{l.AddDate(0, 0, -27), l}
		cps[i] = map[string]date{"firstDate": dateOf(periods[i].first), "lastDate": dateOf(l)}
	}
	gap, nanGap := map[int]bool{}, map[int]bool{}
	for _, g := range s.Gaps {
		gap[g] = true
	}
	for _, g := range s.NaNGaps {
		nanGap[g] = true
	}
	out := map[string]any{}
	names := make([]string, 0, len(s.Before))
	for name := range s.Before {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m, ok := metrics[name]
		if !ok || !contains(asked, m.api) {
			continue
		}
		before := s.Before[name]
		after, ok := s.After[name]
		if !ok {
			after = before
		}
		hist := make([]map[string]any, len(m.edges))
		dens := make([][]any, len(m.edges))
		p75s := make([]any, n)
		for i, p := range periods {
			if gap[i] || nanGap[i] {
				p75s[i] = nil
				if nanGap[i] {
					p75s[i] = "NaN"
				}
				for b := range dens {
					dens[b] = append(dens[b], "NaN")
				}
				continue
			}
			f := shareAfter(p.first, p.last, s.ChangeAt)
			mix := mixture{before: lognormal(before, m.sigma), after: lognormal(after, m.sigma), f: f}
			p75 := mix.quantile(0.75)
			if m.cls {
				p75s[i] = strconv.FormatFloat(math.Round(p75*100)/100, 'f', 2, 64)
			} else {
				p75s[i] = math.Round(p75)
			}
			sum := 0.0
			for b := range m.edges {
				var v float64
				if b == len(m.edges)-1 {
					v = math.Round((1-sum)*10000) / 10000
				} else {
					v = math.Round((mix.cdf(m.edges[b+1])-mix.cdf(m.edges[b]))*10000) / 10000
					sum += v
				}
				dens[b] = append(dens[b], v)
			}
		}
		for b, start := range m.edges {
			bin := map[string]any{"start": bound(start, m.cls), "densities": dens[b]}
			if b < len(m.edges)-1 {
				bin["end"] = bound(m.edges[b+1], m.cls)
			}
			hist[b] = bin
		}
		out[m.api] = map[string]any{"histogramTimeseries": hist, "percentilesTimeseries": map[string]any{"p75s": p75s}}
	}
	return map[string]any{"key": key, "metrics": out, "collectionPeriods": cps}
}

// bound is a bin edge as the API writes it: CLS's as strings ("0.10").
func bound(v float64, cls bool) any {
	if cls {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return v
}

func contains(list []string, s string) bool {
	if len(list) == 0 {
		return true // no metrics asked: the API answers them all
	}
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// shareAfter is the share of the days first..last (inclusive) on or after change.
func shareAfter(first, last, change time.Time) float64 {
	if change.IsZero() {
		return 0
	}
	days := last.Sub(first).Hours()/24 + 1
	after := last.Sub(change).Hours()/24 + 1
	return math.Min(math.Max(after/days, 0), 1)
}

// logn is a log-normal distribution of values.
type logn struct{ mu, sigma float64 }

// lognormal is the log-normal with this p75 and spread.
func lognormal(p75, sigma float64) logn {
	return logn{math.Log(math.Max(p75, 1e-6)) - 0.6745*sigma, sigma}
}

func (l logn) cdf(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return 0.5 * math.Erfc(-(math.Log(x)-l.mu)/(l.sigma*math.Sqrt2))
}

// mixture is the visits of a period: a share f after the change, the rest before.
type mixture struct {
	before, after logn
	f             float64
}

func (m mixture) cdf(x float64) float64 { return (1-m.f)*m.before.cdf(x) + m.f*m.after.cdf(x) }

// quantile solves cdf(x) = q by bisection on a log scale.
func (m mixture) quantile(q float64) float64 {
	lo, hi := 1e-6, 1e7
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if m.cdf(mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// inProcess answers every request by calling the double in the caller's goroutine.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	w := &recorder{header: http.Header{}, code: http.StatusOK}
	t.h.ServeHTTP(w, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: w.code, Status: fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.header,
		Body: io.NopCloser(bytes.NewReader(w.body.Bytes())), ContentLength: int64(w.body.Len()), Request: req}, nil
}

type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}
