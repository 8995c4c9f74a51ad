package handlers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitepulse/handlers/metrics"
	"sitepulse/store"
	"sitepulse/store/memory"
)

// unreadyStore answers pings but its schema lacks a migration.
type unreadyStore struct{ store.Store }

func (unreadyStore) Ready(context.Context) error { return errors.New("schema at migration 5") }

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readBody(t, resp)
}

// /readyz is 200 when the store answers with this program's schema; 503 while the process
// drains (Stopping closed), when the store does not answer, or when its schema is behind;
// /healthz stays 200 while draining: the process is alive.
func TestReadiness(t *testing.T) {
	stopping := make(chan struct{})
	ts := newTestServerWith(t, memory.New(), func(d *Deps) { d.Stopping = stopping })
	resp, body := get(t, ts.URL+"/readyz")
	wantStatus(t, resp, http.StatusOK)
	contains(t, body, `"ready"`)
	close(stopping)
	resp, body = get(t, ts.URL+"/readyz")
	wantStatus(t, resp, http.StatusServiceUnavailable)
	contains(t, body, `"draining"`)
	resp, _ = get(t, ts.URL+"/healthz")
	wantStatus(t, resp, http.StatusOK)

	for name, st := range map[string]store.Store{"that does not answer or is behind": unreadyStore{memory.New()}} {
		t.Run("a store "+name+" is not ready", func(t *testing.T) {
			ts := newTestServer(t, st)
			resp, _ := get(t, ts.URL+"/readyz")
			wantStatus(t, resp, http.StatusServiceUnavailable)
		})
	}
}

// A worker (-role worker) answers its health, readiness and metrics, and no page or API.
func TestWorkerServesOnlyOperations(t *testing.T) {
	ts := newTestServerWith(t, memory.New(), func(d *Deps) { d.OpsOnly = true; d.MetricsToken = "m-token" })
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/login": 404, "/": 404, "/signup": 404,
		"/api/mcp": 404, "/static/app.css": 404, "/.well-known/oauth-authorization-server": 404} {
		resp, _ := get(t, ts.URL+path)
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	resp, _ := get(t, ts.URL+"/metrics", "Authorization", "Bearer m-token")
	wantStatus(t, resp, http.StatusOK)
}

// /metrics on the main listener needs METRICS_TOKEN as a bearer token; without the setting
// there is no such page.
func TestMetricsToken(t *testing.T) {
	off := newTestServer(t, memory.New())
	resp, _ := get(t, off.URL+"/metrics")
	wantStatus(t, resp, http.StatusNotFound)
	resp, _ = get(t, off.URL+"/metrics", "Authorization", "Bearer ")
	wantStatus(t, resp, http.StatusNotFound)

	ts := newTestServerWith(t, memory.New(), func(d *Deps) { d.MetricsToken = "m-token" })
	for _, auth := range []string{"", "Bearer", "Bearer m-toke", "Bearer m-tokenx", "Basic m-token", "bearer-m-token"} {
		resp, _ := get(t, ts.URL+"/metrics", "Authorization", auth)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: %d %q, want 401 with a Bearer challenge", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	resp, body := get(t, ts.URL+"/metrics", "Authorization", "Bearer m-token")
	wantStatus(t, resp, http.StatusOK)
	contains(t, body, "# TYPE sitepulse_http_requests_total counter")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
}

// promFamily is one family parsed from the text exposition format.
type promFamily struct {
	help, typ string
	samples   []promSample
}

type promSample struct {
	name   string
	labels map[string]string
	order  []string // label names in order
	value  float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseProm parses the text exposition format (version 0.0.4) strictly: every sample belongs
// to a family declared by HELP and TYPE before it, names and label names are valid, label values
// are quoted with only \\, \" and \n escapes, values are floats (or +Inf, -Inf, NaN).
func parseProm(t *testing.T, r io.Reader) map[string]*promFamily {
	t.Helper()
	fams := map[string]*promFamily{}
	var cur *promFamily
	var curName string
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		if l == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "# "); ok {
			kw, rest, _ := strings.Cut(rest, " ")
			name, text, _ := strings.Cut(rest, " ")
			if !metricName.MatchString(name) {
				t.Fatalf("line %d: bad metric name %q", line, name)
			}
			f := fams[name]
			switch kw {
			case "HELP":
				if f != nil {
					t.Fatalf("line %d: second HELP of %s", line, name)
				}
				f = &promFamily{help: text}
				fams[name] = f
				cur, curName = f, name
			case "TYPE":
				if f == nil || f != cur || f.typ != "" {
					t.Fatalf("line %d: TYPE of %s not right after its HELP", line, name)
				}
				switch text {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					t.Fatalf("line %d: type %q", line, text)
				}
				f.typ = text
			default:
				t.Fatalf("line %d: comment %q", line, l)
			}
			continue
		}
		s := parseSample(t, line, l)
		base := s.name
		if cur != nil && cur.typ == "histogram" {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(s.name, suf); ok && b == curName {
					base = b
				}
			}
		}
		if cur == nil || base != curName || cur.typ == "" {
			t.Fatalf("line %d: sample %s outside its family (HELP and TYPE first)", line, s.name)
		}
		cur.samples = append(cur.samples, s)
	}
	return fams
}

func parseSample(t *testing.T, line int, l string) promSample {
	t.Helper()
	s := promSample{labels: map[string]string{}}
	i := strings.IndexAny(l, "{ ")
	if i < 0 {
		t.Fatalf("line %d: %q", line, l)
	}
	s.name = l[:i]
	if !metricName.MatchString(s.name) {
		t.Fatalf("line %d: bad name %q", line, s.name)
	}
	rest := l[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				t.Fatalf("line %d: labels of %q", line, l)
			}
			name := rest[:eq]
			if !labelName.MatchString(name) || strings.HasPrefix(name, "__") {
				t.Fatalf("line %d: bad label name %q", line, name)
			}
			rest = rest[eq+2:]
			var v strings.Builder
			for {
				if rest == "" {
					t.Fatalf("line %d: unterminated label value", line)
				}
				c := rest[0]
				rest = rest[1:]
				if c == '"' {
					break
				}
				if c == '\\' {
					switch rest[0] {
					case '\\', '"':
						v.WriteByte(rest[0])
					case 'n':
						v.WriteByte('\n')
					default:
						t.Fatalf("line %d: escape \\%c", line, rest[0])
					}
					rest = rest[1:]
					continue
				}
				v.WriteByte(c)
			}
			if _, dup := s.labels[name]; dup {
				t.Fatalf("line %d: label %s twice", line, name)
			}
			s.labels[name] = v.String()
			s.order = append(s.order, name)
			rest = strings.TrimPrefix(rest, ",")
		}
		rest = rest[1:]
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 || rest[0] != ' ' {
		t.Fatalf("line %d: value of %q", line, l)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		t.Fatalf("line %d: value %q: %v", line, fields[0], err)
	}
	s.value = v
	return s
}

// idLike is a label value that looks like an identifier: a UUID, a long hex or base64url
// run, or any run of digits longer than a status code.
var idLike = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-|[0-9a-f]{16,}|[A-Za-z0-9_-]{22,}|\d{4,}`)

// checkExposition asserts what every scrape must be: each family with HELP and TYPE, counters
// ending in _total, each histogram's buckets cumulative and ending at +Inf equal to _count, with
// a _sum; no label value that looks like an id.
func checkExposition(t *testing.T, fams map[string]*promFamily) {
	t.Helper()
	for name, f := range fams {
		if f.help == "" || f.typ == "" {
			t.Errorf("%s: HELP %q TYPE %q", name, f.help, f.typ)
		}
		if f.typ == "counter" && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s does not end in _total", name)
		}
		for _, s := range f.samples {
			for k, v := range s.labels {
				if idLike.MatchString(v) {
					t.Errorf("%s{%s=%q}: the label value looks like an id", s.name, k, v)
				}
			}
		}
		if f.typ != "histogram" {
			continue
		}
		type series struct {
			last, count, inf float64
			les              []float64
			sum              bool
		}
		bySeries := map[string]*series{}
		key := func(s promSample) string {
			var b strings.Builder
			for _, k := range s.order {
				if k != "le" {
					fmt.Fprintf(&b, "%s=%q,", k, s.labels[k])
				}
			}
			return b.String()
		}
		for _, s := range f.samples {
			sr := bySeries[key(s)]
			if sr == nil {
				sr = &series{inf: -1, count: -1}
				bySeries[key(s)] = sr
			}
			switch s.name {
			case name + "_bucket":
				le, err := strconv.ParseFloat(s.labels["le"], 64)
				if err != nil {
					t.Errorf("%s: le %q", name, s.labels["le"])
				}
				if len(sr.les) > 0 && le <= sr.les[len(sr.les)-1] || s.value < sr.last {
					t.Errorf("%s %s: buckets not ascending and cumulative at le=%s", name, key(s), s.labels["le"])
				}
				sr.les = append(sr.les, le)
				sr.last = s.value
				if s.labels["le"] == "+Inf" {
					sr.inf = s.value
				}
			case name + "_sum":
				sr.sum = true
			case name + "_count":
				sr.count = s.value
			}
		}
		for k, sr := range bySeries {
			if sr.inf < 0 || sr.inf != sr.count || !sr.sum || sr.les[len(sr.les)-1] != sr.les[len(sr.les)-1] {
				t.Errorf("%s %s: +Inf bucket %v, count %v, sum %v", name, k, sr.inf, sr.count, sr.sum)
			}
		}
	}
}

// A scrape after requests to routes with ids in their paths, unknown paths and every outcome
// parses strictly, has every family of the table, and labels requests by route pattern only.
func TestMetricsExposition(t *testing.T) {
	st := memory.New()
	m := &metrics.Metrics{Role: "all", Version: "v1.4.0", Jobs: st, PSI: func() metrics.PSIFigures { return metrics.PSIFigures{Used: 7, Limit: 25000, Breaker: "half_open"} }}
	ts := newTestServerWith(t, st, func(d *Deps) { d.Metrics = m; d.MetricsToken = "m-token" })
	if _, err := st.EnqueueJob(context.Background(), store.ScanJob{ScanID: "scan-" + store.NewID()}, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	id := store.NewID()
	for _, path := range []string{"/sites/" + id, "/sites/" + id + "/scans/" + store.NewID(), "/report/" + store.NewID(), "/no/such/" + id,
		"/api/external/scans/" + id, "/healthz", "/login", "/login"} {
		resp, _ := get(t, ts.URL+path)
		_ = resp
	}
	m.Scans.Add("completed")
	m.Audits.Add("ok")
	m.Audits.Add("failed")
	m.Deliveries.Add(store.DeliveryDelivered)
	resp, body := get(t, ts.URL+"/metrics", "Authorization", "Bearer m-token")
	wantStatus(t, resp, http.StatusOK)
	fams := parseProm(t, strings.NewReader(body))
	checkExposition(t, fams)
	for _, name := range metrics.Names() {
		if strings.HasPrefix(name, "sitepulse_db_") {
			continue // no Postgres here
		}
		if fams[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}
	routes := map[string]bool{}
	for _, s := range fams["sitepulse_http_requests_total"].samples {
		routes[s.labels["route"]] = true
	}
	for _, want := range []string{"GET /sites/{siteId}", "GET /sites/{siteId}/scans/{scanId}", "GET /report/{token}", "other", "GET /login", "GET /healthz"} {
		if !routes[want] {
			t.Errorf("no requests counted for route %q: %v", want, routes)
		}
	}
	if strings.Contains(body, id) {
		t.Error("the scrape names an id")
	}
	for _, want := range []string{`sitepulse_jobs{kind="scan",state="available"} 1`, `sitepulse_psi_breaker_state{state="half_open"} 1`,
		`sitepulse_psi_quota_remaining 24993`, `sitepulse_audits_total{outcome="failed"} 1`, `sitepulse_info{role="all",version="v1.4.0"} 1`,
		`sitepulse_http_requests_total{route="GET /login",code="200"} 4`} { // two asked, two reached by redirect
		contains(t, body, want)
	}
	for _, s := range fams["sitepulse_jobs_oldest_runnable_age_seconds"].samples {
		if s.labels["kind"] == "scan" && s.value < 60 {
			t.Errorf("oldest runnable scan job is %v s old, want at least 60", s.value)
		}
	}
}

// The parser refuses what a real one refuses, so the exposition test can fail.
func TestParsePromRefusesBadText(t *testing.T) {
	for _, bad := range []string{
		"x_total 1\n", // no HELP/TYPE
		"# HELP x_total h\n# TYPE x_total counter\nx_total{a=\"1} 1\n",
		"# HELP x h\n# TYPE x gauge\nx{a=\"\\q\"} 1\n",
		"# HELP x h\n# TYPE x gauge\nx one\n",
	} {
		ft := &testing.T{}
		done := make(chan struct{})
		go func() { defer close(done); parseProm(ft, strings.NewReader(bad)) }()
		<-done
		if !ft.Failed() {
			t.Errorf("accepted %q", bad)
		}
	}
	ft := &testing.T{}
	checkExposition(ft, map[string]*promFamily{"h": {help: "h", typ: "histogram", samples: []promSample{
		{name: "h_bucket", labels: map[string]string{"le": "1"}, order: []string{"le"}, value: 3},
		{name: "h_bucket", labels: map[string]string{"le": "+Inf"}, order: []string{"le"}, value: 2},
		{name: "h_sum", value: 1}, {name: "h_count", value: 2}}}})
	if !ft.Failed() {
		t.Error("a histogram whose buckets fall was accepted")
	}
	ft = &testing.T{}
	checkExposition(ft, map[string]*promFamily{"x": {help: "h", typ: "gauge", samples: []promSample{
		{name: "x", labels: map[string]string{"site": "0192f0c4-8b1e-7c3a-9d2e-5f6a7b8c9d0e"}}}}})
	if !ft.Failed() {
		t.Error("an id in a label was accepted")
	}
}

// A live progress stream ends when the process starts draining, so the drain does not wait for
// the scan: the page's script reconnects, to another process.
func TestScanEventsEndWhenDraining(t *testing.T) {
	stopping := make(chan struct{})
	f := newUIFixture(t, time.Hour, memory.New(), func(d *Deps) { d.Stopping = stopping })
	scan := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
	if err := f.ts.store.EnqueueScan(t.Context(), scan, store.KindScan, f.ts.now); err != nil {
		t.Fatal(err)
	}
	resp, err := f.a.c.Get(f.ts.URL + "/sites/" + f.site + "/scans/" + scan.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	wantStatus(t, resp, http.StatusOK)
	readEvents(t, resp, func(scanEvent) bool { return false }) // its first event: it is live
	close(stopping)
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("the stream did not end cleanly: %v", err)
	}
}
