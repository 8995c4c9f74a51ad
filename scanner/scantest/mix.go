package scantest

import (
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"
)

// MixConfig is the share of calls that fail, by kind; the rest are answered from the fixtures.
type MixConfig struct {
	Quota       float64 // 429 RESOURCE_EXHAUSTED, in bursts of QuotaBurst consecutive calls
	QuotaBurst  int     // default 1
	ServerError float64 // 500 Lighthouse error, or a 502/503 HTML page from a front end
	Timeout     float64 // never answers until the client gives up
	Garbage     float64 // 200 with a body that is not a PSI result: HTML, truncated JSON, {}
	Seed        uint64  // the same seed gives the same sequence of faults
}

// Mix is a fake PSI that answers each call at random with one of PSI's failure modes, in the
// proportions of its MixConfig, and otherwise with the real fixture as PSI does. It records
// when each call arrived, so a test can measure calls per window against a rate limit.
type Mix struct {
	psi *PSI

	mu        sync.Mutex
	cfg       MixConfig
	rng       *rand.Rand
	burstLeft int
	kinds     map[string]int
	arrivals  []time.Time
}

// Kinds of answer a Mix gives, the keys of Kinds.
const (
	KindOK          = "ok"
	KindQuota       = "429"
	KindServerError = "5xx"
	KindTimeout     = "timeout"
	KindGarbage     = "garbage"
)

// NewMix is the fake over the fixtures in dir. It has no listener: its Client answers in
// process, so a test can run it inside a testing/synctest bubble.
func NewMix(dir string, cfg MixConfig) *Mix {
	m := &Mix{psi: newPSI(dir), kinds: map[string]int{}} // its fixtures, served by m itself
	m.Set(cfg)
	return m
}

// Client is an HTTP client that reaches the fake in process.
func (m *Mix) Client() *http.Client {
	return &http.Client{Transport: Transport(http.HandlerFunc(m.serve))}
}

// Set changes the mix for the calls that follow; MixConfig{} answers every call cleanly.
func (m *Mix) Set(cfg MixConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cfg.QuotaBurst < 1 {
		cfg.QuotaBurst = 1
	}
	m.cfg, m.burstLeft = cfg, 0
	m.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5173))
}

// Endpoint is the PAGESPEED_API_URL of the fake.
func (m *Mix) Endpoint() string { return "http://psi.test/pagespeedonline/v5/runPagespeed" }

// Kinds counts the answers given, by kind.
func (m *Mix) Kinds() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.kinds))
	for k, v := range m.kinds {
		out[k] = v
	}
	return out
}

// Arrivals are the times the calls arrived, in order.
func (m *Mix) Arrivals() []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Time(nil), m.arrivals...)
}

// pick chooses the kind of the next answer and, for garbage, its variant.
func (m *Mix) pick() (kind string, variant int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.arrivals = append(m.arrivals, time.Now())
	c := m.cfg
	defer func() { m.kinds[kind]++ }()
	if m.burstLeft > 0 {
		m.burstLeft--
		return KindQuota, 0
	}
	x := m.rng.Float64()
	variant = m.rng.IntN(4)
	switch {
	case x < c.Quota:
		m.burstLeft = c.QuotaBurst - 1
		return KindQuota, 0
	case x < c.Quota+c.ServerError:
		return KindServerError, variant
	case x < c.Quota+c.ServerError+c.Timeout:
		return KindTimeout, 0
	case x < c.Quota+c.ServerError+c.Timeout+c.Garbage:
		return KindGarbage, variant
	}
	return KindOK, 0
}

func (m *Mix) serve(w http.ResponseWriter, r *http.Request) {
	kind, variant := m.pick()
	switch kind {
	case KindOK:
		m.psi.serve(w, r)
		return
	case KindTimeout:
		<-r.Context().Done()
		return
	case KindQuota:
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(QuotaBody))
	case KindServerError:
		switch variant % 2 {
		case 0:
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(ServerErrorBody))
		default: // a front end's page, not PSI's JSON
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>"))
		}
	case KindGarbage:
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusOK)
		switch variant {
		case 0:
			w.Write([]byte("<!doctype html><title>Error</title>"))
		case 1:
			body, _ := m.psi.fixture("home.mobile.json")
			w.Write(body[:len(body)/2]) // cut off mid-answer
		case 2:
			w.Write([]byte(`{}`))
		default:
			w.Write([]byte(`{"lighthouseResult":{"categories":"nope","audits":[]}}`))
		}
	}
}

// MaxInWindow is the most of times that fall within any window of length w: what a quota of
// "n per w" counts.
func MaxInWindow(times []time.Time, w time.Duration) int {
	ts := append([]time.Time(nil), times...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	most, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= w {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}
