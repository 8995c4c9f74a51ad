// Package scantest serves the real PSI fixtures from an httptest server, so pipeline tests in
// any package audit pages without the network, and can inject PSI's failure modes.
package scantest

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
)

// Fault is a canned failure for one page and strategy.
type Fault struct {
	Status int
	Header map[string]string
	Body   string
	Hang   bool // never answer until the client gives up
}

// PSI is a fake PageSpeed Insights endpoint answering from a directory of real responses named
// <page>.<strategy>.json, where <page> is "home" for "/" and the path without slashes otherwise
// ("/blog/" -> blog). A page without a file answers PSI's real ERRORED_DOCUMENT_REQUEST error.
type PSI struct {
	*httptest.Server
	dir    string
	mu     sync.Mutex
	calls  map[string]int
	faults map[string]Fault
	seqs   map[string]sequence // path strategy -> fixture directories of its calls in turn
	all    *Fault              // answers every call without a fault of its own
	gate   chan struct{}
	delay  time.Duration
	jitter time.Duration // answers take delay plus a uniform random part of jitter
	cache  map[string][]byte

	hostCalls   map[string]int // host path strategy -> calls
	inFlight    map[string]int // host -> calls being answered
	maxInFlight int            // most calls answered at once
	maxHosts    int            // most distinct hosts (sites) being answered at once

	arrivals     []time.Time   // when each call arrived
	refuseOver   int           // answer 429 to a call arriving with this many in flight; 0: never
	quota        int           // answer 429 to a call arriving when this many were accepted
	quotaWindow  time.Duration // within this window before it; 0: never
	accepted     []time.Time   // when the calls not refused arrived, for quota
	retryAfter   string        // the Retry-After of those 429s
	retryWait    time.Duration // the same, parsed
	firstRefused time.Time     // when the first 429 was answered
	refused      int           // 429s answered
	refusedLater int           // those to calls that arrived once the first one's Retry-After was over
}

// NewPSI starts the fake on 127.0.0.1; it stops when the test ends.
func NewPSI(t testing.TB, dir string) *PSI {
	p := newPSI(dir)
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// newPSI is the fake without a server of its own.
func newPSI(dir string) *PSI {
	return &PSI{dir: dir, calls: map[string]int{}, faults: map[string]Fault{}, seqs: map[string]sequence{}, cache: map[string][]byte{},
		hostCalls: map[string]int{}, inFlight: map[string]int{}}
}

// Handler is the fake's handler, answering after delay, for a command that listens itself
// (the PSI double of .ci/loadkit).
func Handler(dir string, delay time.Duration) http.Handler {
	p := newPSI(dir)
	p.delay = delay
	return http.HandlerFunc(p.serve)
}

// NewInProcess is the fake without a listener: its Client answers in the caller's own
// goroutine, so a pipeline test can run inside a testing/synctest bubble (where a goroutine
// blocked on a socket would keep fake time from moving) and its Delay and Hold run on the
// bubble's clock.
func NewInProcess(dir string) *PSI { return newPSI(dir) }

// Endpoint is the PAGESPEED_API_URL of the fake.
func (p *PSI) Endpoint() string {
	if p.Server == nil {
		return "http://psi.test/pagespeedonline/v5/runPagespeed"
	}
	return p.URL + "/pagespeedonline/v5/runPagespeed"
}

// Client is an HTTP client that reaches the fake: through its listener when it has one, in
// process otherwise.
func (p *PSI) Client() *http.Client {
	if p.Server != nil {
		return p.Server.Client()
	}
	return &http.Client{Transport: Transport(http.HandlerFunc(p.serve))}
}

// Transport answers every request by calling h in the caller's goroutine: an HTTP double
// without a socket, which a testing/synctest bubble can hold.
func Transport(h http.Handler) http.RoundTripper { return inProcess{h} }

type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil { // the client gave up (a Hang fault, a timeout)
		return nil, err
	}
	return rec.Result(), nil
}

// sequence is the fixture directories of one page's calls from call after+1 on.
type sequence struct {
	dirs  []string
	after int
}

// Sequence answers the next calls for one page and strategy from fixture directories in turn:
// the first from dirs[0], the second from dirs[1], every call after the last from the last one.
// So a page can look regressed on one run and recover on the next. A directory without the
// page's fixture answers PSI's ERRORED_DOCUMENT_REQUEST error.
func (p *PSI) Sequence(path string, strategy store.Strategy, dirs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := path + " " + string(strategy)
	p.seqs[key] = sequence{dirs: dirs, after: p.calls[key]}
}

// Fail makes every call for path and strategy answer f.
func (p *PSI) Fail(path string, strategy store.Strategy, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[path+" "+string(strategy)] = f
}

// FailAll makes every call without a fault of its own answer f, as PSI does when it refuses
// the key or is down.
func (p *PSI) FailAll(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = &f
}

// Heal removes every fault: PSI is back.
func (p *PSI) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults, p.all = map[string]Fault{}, nil
}

// Hold makes calls wait until the returned function is called.
func (p *PSI) Hold() (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gate := make(chan struct{})
	p.gate = gate
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// Delay makes every answer take d, like a real PSI (10-60 s) in miniature.
func (p *PSI) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// DelayBetween makes every answer take a random time in [lo, hi], so concurrent callers
// finish out of order as they do against the real PSI.
func (p *PSI) DelayBetween(lo, hi time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.jitter = lo, max(0, hi-lo)
}

// RefuseAbove makes a call that arrives while n others are being answered get PSI's 429
// (QuotaBody) at once, with a Retry-After of retryAfter whole seconds: a key whose quota
// allows n calls at once.
func (p *PSI) RefuseAbove(n, retryAfter int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuseOver, p.retryAfter, p.retryWait = n, strconv.Itoa(retryAfter), time.Duration(retryAfter)*time.Second
}

// RefuseOverRate makes a call that arrives when n calls were accepted in the last window get
// PSI's 429 at once, with a Retry-After of retryAfter whole seconds: a key whose quota is n
// calls per window, whatever the client was configured with.
func (p *PSI) RefuseOverRate(n int, window time.Duration, retryAfter int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quota, p.quotaWindow = n, window
	p.retryAfter, p.retryWait = strconv.Itoa(retryAfter), time.Duration(retryAfter)*time.Second
}

// Refused is how many 429s RefuseAbove or RefuseOverRate gave, and how many of them went to calls that arrived
// once the first 429's Retry-After was over: calls sent by a client that had heard of the
// limit (those of the first burst, sent together before any answer came, are not).
func (p *PSI) Refused() (all, afterFirst int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused, p.refusedLater
}

// Arrivals are the times the calls arrived, in order.
func (p *PSI) Arrivals() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.arrivals...)
}

// HostCalls is how many requests asked for path and strategy of the page on host: with one
// site per host, the calls of one site's scan.
func (p *PSI) HostCalls(host, path string, strategy store.Strategy) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hostCalls[host+" "+path+" "+string(strategy)]
}

// MaxInFlight is the most requests the fake was answering at once, and the most distinct page
// hosts among them: with one site per host, a lower bound of the scans a caller ran at once.
func (p *PSI) MaxInFlight() (requests, hosts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxInFlight, p.maxHosts
}

// Calls is how many requests asked for path and strategy.
func (p *PSI) Calls(path string, strategy store.Strategy) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[path+" "+string(strategy)]
}

// Total is how many requests the fake answered.
func (p *PSI) Total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		n += c
	}
	return n
}

// SamplePages are the five pages of the sample site the fixtures were made from (a fresh slice
// each call): a site with them audits 5 pages x 2 strategies = 10 fixtures.
func SamplePages() []string { return []string{"/", "/about", "/blog/", "/fast", "/pricing"} }

// FixtureName maps a page path to its fixture's base name.
func FixtureName(path string) string {
	name := strings.Trim(path, "/")
	if name == "" {
		return "home"
	}
	return strings.ReplaceAll(name, "/", "_")
}

func (p *PSI) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	u, err := url.Parse(q.Get("url"))
	if err != nil || u.Host == "" {
		http.Error(w, `{"error":{"code":400,"message":"Invalid value at 'url'"}}`, http.StatusBadRequest)
		return
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	strategy := q.Get("strategy")
	key := path + " " + strategy
	p.mu.Lock()
	p.calls[key]++
	dir := p.dir
	if seq, ok := p.seqs[key]; ok {
		dir = seq.dirs[min(p.calls[key]-seq.after, len(seq.dirs))-1]
	}
	p.hostCalls[u.Host+" "+key]++
	fault, faulty := p.faults[key]
	if !faulty && p.all != nil {
		fault, faulty = *p.all, true
	}
	gate, delay := p.gate, p.delay
	if p.jitter > 0 {
		delay += rand.N(p.jitter + 1)
	}
	arrived := time.Now()
	p.arrivals = append(p.arrivals, arrived)
	n := 0
	for _, c := range p.inFlight {
		n += c
	}
	refuse := p.refuseOver > 0 && n >= p.refuseOver || p.quota > 0 && p.inQuotaWindow(arrived) >= p.quota
	if !refuse {
		p.accepted = append(p.accepted, arrived)
	}
	if refuse {
		p.refused++
		if !p.firstRefused.IsZero() && !arrived.Before(p.firstRefused.Add(p.retryWait)) {
			p.refusedLater++
		}
		retry := p.retryAfter
		p.mu.Unlock()
		p.answerRefused(w, retry)
		return
	}
	p.inFlight[u.Host]++
	n++
	p.maxInFlight = max(p.maxInFlight, n)
	p.maxHosts = max(p.maxHosts, len(p.inFlight))
	p.mu.Unlock()
	// The call stops counting as in flight when its answer is decided, before it is written: a
	// client that has read the answer and sends its next call must not find this one still
	// counted, which under a loaded scheduler made RefuseAbove refuse calls PSI would not.
	var leaveOnce sync.Once
	leave := func() {
		leaveOnce.Do(func() {
			p.mu.Lock()
			if p.inFlight[u.Host]--; p.inFlight[u.Host] == 0 {
				delete(p.inFlight, u.Host)
			}
			p.mu.Unlock()
		})
	}
	defer leave()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if !(faulty && fault.Hang) {
		leave()
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if faulty {
		if fault.Hang {
			<-r.Context().Done()
			return
		}
		for k, v := range fault.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(fault.Status)
		w.Write([]byte(fault.Body))
		return
	}
	body, err := p.fixture(filepath.Join(dir, FixtureName(path)+"."+strategy+".json"))
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":{"code":500,"message":"Lighthouse returned error: ERRORED_DOCUMENT_REQUEST. Lighthouse was unable to reliably load the page you requested. Make sure you are testing the correct URL and that the server is properly responding to all requests. (Status code: 404)","errors":[{"domain":"lighthouse","reason":"lighthouseError"}]}}`))
		return
	}
	w.Write(body)
}

// inQuotaWindow is how many calls were accepted within the quota window before now.
func (p *PSI) inQuotaWindow(now time.Time) int {
	n := 0
	for _, t := range p.accepted {
		if now.Sub(t) < p.quotaWindow {
			n++
		}
	}
	return n
}

// answerRefused answers PSI's per-100-seconds 429 at once and notes when the first went.
func (p *PSI) answerRefused(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write([]byte(QuotaBody))
	w.(http.Flusher).Flush() // sent: from now on a client could know
	p.mu.Lock()
	if p.firstRefused.IsZero() {
		p.firstRefused = time.Now()
	}
	p.mu.Unlock()
}

func (p *PSI) fixture(file string) ([]byte, error) {
	p.mu.Lock()
	b, ok := p.cache[file]
	p.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.cache[file] = b
	p.mu.Unlock()
	return b, nil
}

// Real PSI error bodies (testdata/psi/README.md), for Fault.Body.
const (
	FailedDocumentBody = `{"error":{"code":400,"message":"Lighthouse returned error: FAILED_DOCUMENT_REQUEST. Lighthouse was unable to reliably load the page you requested. Make sure you are testing the correct URL and that the server is properly responding to all requests. (Details: net::ERR_TIMED_OUT)","errors":[{"domain":"lighthouse","reason":"lighthouseUserError"}]}}`
	DailyQuotaBody     = `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service 'pagespeedonline.googleapis.com' for consumer 'project_number:1'.","status":"RESOURCE_EXHAUSTED"}}`
	ForbiddenBody      = `{"error":{"code":403,"message":"PageSpeed Insights API has not been used in project 1 before or it is disabled.","status":"PERMISSION_DENIED"}}`
	QuotaBody          = `{"error":{"code":429,"message":"Quota exceeded for quota group 'default' and limit 'Queries per 100 seconds' of service 'pagespeedonline.googleapis.com'.","status":"RESOURCE_EXHAUSTED"}}`
	ServerErrorBody    = `{"error":{"code":500,"message":"Lighthouse returned error: Something went wrong.","errors":[{"domain":"lighthouse","reason":"lighthouseError"}]}}`
)
