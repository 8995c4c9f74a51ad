// Package crux reads the CrUX History API (records:queryHistoryRecord): the weekly p75 and
// histogram of real Chrome users' LCP, INP, CLS, FCP and TTFB for an origin or a page, by form
// factor, over up to 40 collection periods of 28 days (DESIGN §19). Refresher is the worker of
// the weekly refresh job (store.KindCrux); cruxtest is the API's double.
package crux

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sitepulse/scanner/psi"
	"sitepulse/store"
)

// DefaultEndpoint is the CrUX History API's query (CRUX_API_URL).
const DefaultEndpoint = "https://chromeuxreport.googleapis.com/v1/records:queryHistoryRecord"

// Periods is how many collection periods a query asks for: the API's most.
const Periods = 40

// PerMinute is the CrUX API's quota: 150 queries per minute per Google Cloud project.
const PerMinute = 150

// DailyRequests is CRUX_DAILY_REQUESTS' default: the API's quota, PerMinute, for a whole day.
const DailyRequests = PerMinute * 24 * 60

// Metrics maps the API's metric names to SitePulse's (store.FieldMetrics), in request order.
var Metrics = []struct{ API, Name string }{
	{"largest_contentful_paint", "lcp"},
	{"interaction_to_next_paint", "inp"},
	{"cumulative_layout_shift", "cls"},
	{"first_contentful_paint", "fcp"},
	{"experimental_time_to_first_byte", "ttfb"},
}

// FormFactor is the API's formFactor of a device class.
func FormFactor(d store.FieldDevice) string {
	if d == store.FieldDesktop {
		return "DESKTOP"
	}
	return "PHONE"
}

// Config configures a Client. Zero values get the defaults noted.
type Config struct {
	// Endpoint is CRUX_API_URL. Default DefaultEndpoint.
	Endpoint string
	// Key is the Google API key (PAGESPEED_API_KEY: the same key works once the Chrome UX
	// Report API is enabled on its project); sent as key=, never logged nor put in an error.
	Key string
	// HTTP makes the calls. Default a client with a 30 s timeout.
	HTTP *http.Client
	// Limiter paces the calls under the API's quota. Default PerMinute a minute.
	Limiter *psi.RateLimiter
	// Budget is CRUX_DAILY_REQUESTS, shared by every refresh of this process. Default
	// DailyRequests.
	Budget *Budget
	Now    func() time.Time
}

// Client queries the CrUX History API.
type Client struct{ cfg Config }

// New returns a client with cfg's defaults filled in.
func New(cfg Config) *Client {
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Limiter == nil {
		cfg.Limiter = psi.NewRateLimiter(PerMinute, time.Minute)
	}
	if cfg.Budget == nil {
		cfg.Budget = NewBudget(DailyRequests)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{cfg: cfg}
}

// Query is one record to ask for: an origin (Page "") or a page, on one device.
type Query struct {
	// Origin is the site's origin, queried when Page is "".
	Origin string
	// Page is a page's URL, as SitePulse monitors it.
	Page   string
	Device store.FieldDevice
}

// APIError is an answer of the API other than 200 and 404.
type APIError struct {
	Status int
	// Reason is the API's error status and message, the key scrubbed.
	Reason string
	// After is when the API asked to be called again (Retry-After); zero when it did not say.
	After time.Time
}

func (e *APIError) Error() string {
	return fmt.Sprintf("CrUX API answered HTTP %d: %s", e.Status, e.Reason)
}

// Temporary reports whether a later call may succeed: 429 and 5xx.
func (e *APIError) Temporary() bool { return e.Status == http.StatusTooManyRequests || e.Status >= 500 }

// KeyRefused reports whether the key was refused: wrong, or the API not enabled on its project.
func (e *APIError) KeyRefused() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
}

// BudgetSpent is the error of a call CRUX_DAILY_REQUESTS does not allow today.
type BudgetSpent struct{ Until time.Time }

func (e *BudgetSpent) Error() string {
	return fmt.Sprintf("CRUX_DAILY_REQUESTS is spent until %s", e.Until.Format(time.RFC3339))
}

// History asks the API for q's record: Found false for its 404 NOT_FOUND (no field data for
// this origin or page on this device; a 404 without it, a wrong CRUX_API_URL, is an error), else a point per metric and collection period. A transport failure
// or an answer other than 200 and 404 is an error (*APIError for an HTTP status), the key
// never in it.
func (c *Client) History(ctx context.Context, q Query) (store.CruxRecord, error) {
	rec := store.CruxRecord{Page: q.Page, Device: q.Device}
	if ok, reset := c.cfg.Budget.Take(c.cfg.Now()); !ok {
		return rec, &BudgetSpent{Until: reset}
	}
	if err := c.cfg.Limiter.Wait(ctx); err != nil {
		return rec, err
	}
	body := map[string]any{"formFactor": FormFactor(q.Device), "collectionPeriodCount": Periods}
	if q.Page == "" {
		body["origin"] = q.Origin
	} else {
		body["url"] = q.Page
	}
	metrics := make([]string, len(Metrics))
	for i, m := range Metrics {
		metrics[i] = m.API
	}
	body["metrics"] = metrics
	raw, _ := json.Marshal(body)
	u := c.cfg.Endpoint
	if c.cfg.Key != "" {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + "key=" + url.QueryEscape(c.cfg.Key)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(raw))
	if err != nil {
		return rec, errors.New(c.redact(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL carries the key
		}
		return rec, fmt.Errorf("CrUX API: %s", c.redact(err.Error()))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return rec, fmt.Errorf("CrUX API: reading the answer: %s", c.redact(err.Error()))
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && strings.HasPrefix(apiReason(data), "NOT_FOUND"):
		return rec, nil // the API's "chrome ux report data not found": no field data
	case resp.StatusCode != http.StatusOK:
		e := &APIError{Status: resp.StatusCode, Reason: c.redact(apiReason(data))}
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), c.cfg.Now()); ok {
			e.After = c.cfg.Now().Add(d)
		}
		return rec, e
	case len(data) > maxBody:
		return rec, fmt.Errorf("CrUX API: the answer is larger than %d bytes", maxBody)
	}
	points, err := Parse(data)
	if err != nil {
		return rec, err
	}
	rec.Found, rec.Points = true, points
	for i := range rec.Points {
		rec.Points[i].Page, rec.Points[i].Device = q.Page, q.Device
	}
	return rec, nil
}

// maxBody bounds an answer read: 40 periods of five metrics take about 40 kB.
const maxBody = 4 << 20

// apiReason is the status and message of Google's error body, or its first bytes.
func apiReason(body []byte) string {
	var e struct {
		Error struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Error.Status != "" || e.Error.Message != "") {
		return strings.TrimSpace(e.Error.Status + " " + e.Error.Message)
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// redact removes the key from text.
func (c *Client) redact(s string) string {
	s = keyParam.ReplaceAllString(s, "${1}REDACTED")
	if len(c.cfg.Key) >= 8 {
		s = strings.ReplaceAll(s, c.cfg.Key, "REDACTED")
		s = strings.ReplaceAll(s, url.QueryEscape(c.cfg.Key), "REDACTED")
	}
	return s
}

var keyParam = regexp.MustCompile(`([?&]key=)[^&\s"'<>]*`)

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// The API's answer (developer.chrome.com/docs/crux/history-api): record.key, record.metrics by
// name with histogramTimeseries (bins of start, end, densities per period) and
// percentilesTimeseries.p75s, and record.collectionPeriods (firstDate, lastDate). Numbers may
// be strings (CLS: "0.05"); an ineligible period's p75 is null or "NaN", its densities "NaN".
type historyAnswer struct {
	Record struct {
		Metrics map[string]struct {
			HistogramTimeseries []struct {
				Start     json.RawMessage   `json:"start"`
				End       json.RawMessage   `json:"end"`
				Densities []json.RawMessage `json:"densities"`
			} `json:"histogramTimeseries"`
			PercentilesTimeseries struct {
				P75s []json.RawMessage `json:"p75s"`
			} `json:"percentilesTimeseries"`
		} `json:"metrics"`
		CollectionPeriods []struct {
			FirstDate apiDate `json:"firstDate"`
			LastDate  apiDate `json:"lastDate"`
		} `json:"collectionPeriods"`
	} `json:"record"`
}

type apiDate struct{ Year, Month, Day int }

func (d apiDate) time() time.Time {
	return time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC)
}

func (d apiDate) valid() bool {
	return d.Year > 0 && d.Month >= 1 && d.Month <= 12 && d.Day >= 1 && d.Day <= 31
}

// number reads a JSON number or a numeric string; nil for null, "NaN", infinities and
// anything else: a gap.
func number(raw json.RawMessage) *float64 {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil
	}
	if unq, err := strconv.Unquote(s); err == nil {
		s = unq
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// Parse reads a queryHistoryRecord answer into points (Source crux, Page and Device left for
// the caller): one per known metric and collection period, oldest first, each period from its
// firstDate at 00:00 UTC to the day after its lastDate. P75 is nil for a gap, and so is the
// Histogram when any of the period's densities is missing.
func Parse(data []byte) ([]store.FieldPoint, error) {
	var a historyAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("CrUX API: the answer is not a history record: %w", err)
	}
	periods := a.Record.CollectionPeriods
	if len(periods) > Periods {
		periods = periods[len(periods)-Periods:]
	}
	skip := len(a.Record.CollectionPeriods) - len(periods)
	for _, p := range periods {
		if !p.FirstDate.valid() || !p.LastDate.valid() {
			return nil, errors.New("CrUX API: a collection period without valid dates")
		}
	}
	var out []store.FieldPoint
	for i, p := range periods {
		idx := skip + i
		for _, m := range Metrics {
			series, ok := a.Record.Metrics[m.API]
			if !ok {
				continue
			}
			pt := store.FieldPoint{Source: store.FieldCrUX, Metric: m.Name, Start: p.FirstDate.time(), End: p.LastDate.time().AddDate(0, 0, 1)}
			if p75s := series.PercentilesTimeseries.P75s; idx < len(p75s) {
				if v := number(p75s[idx]); v != nil && *v >= 0 {
					pt.P75 = v
				}
			}
			pt.Histogram = bins(series.HistogramTimeseries, idx)
			out = append(out, pt)
		}
	}
	return out, nil
}

// bins is one period's histogram, nil when a bin's bounds or density are missing.
func bins(h []struct {
	Start     json.RawMessage   `json:"start"`
	End       json.RawMessage   `json:"end"`
	Densities []json.RawMessage `json:"densities"`
}, idx int) []store.FieldBin {
	if len(h) == 0 {
		return nil
	}
	out := make([]store.FieldBin, 0, len(h))
	for _, b := range h {
		start := number(b.Start)
		if start == nil || idx >= len(b.Densities) {
			return nil
		}
		d := number(b.Densities[idx])
		if d == nil {
			return nil
		}
		bin := store.FieldBin{Start: *start, Count: *d}
		if end := number(b.End); end != nil {
			bin.End = *end
		}
		out = append(out, bin)
	}
	return out
}
