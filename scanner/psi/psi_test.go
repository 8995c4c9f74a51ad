package psi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
)

const testKey = "AIzaSECRET-key_123"

// psiReply is one canned answer of a fake PSI.
type psiReply struct {
	status  int
	header  map[string]string
	body    string
	hang    bool // never answer (until the client gives up)
	fixture string
}

// runtimeErrorBody is the real PSI shape of a Lighthouse runtime error (testdata/psi/README.md).
const failedDocumentBody = `{"error":{"code":400,"message":"Lighthouse returned error: FAILED_DOCUMENT_REQUEST. Lighthouse was unable to reliably load the page you requested. Make sure you are testing the correct URL and that the server is properly responding to all requests. (Details: net::ERR_TIMED_OUT)","errors":[{"message":"x","domain":"lighthouse","reason":"lighthouseUserError"}]}}`
const noFCPBody = `{"error":{"code":400,"message":"Lighthouse returned error: NO_FCP. The page did not paint any content. Please ensure you keep the browser window in the foreground during the load and try again. (NO_FCP)","errors":[{"message":"x","domain":"lighthouse","reason":"lighthouseUserError"}]}}`
const erroredDocumentBody = `{"error":{"code":500,"message":"Lighthouse returned error: ERRORED_DOCUMENT_REQUEST. Lighthouse was unable to reliably load the page you requested. (Status code: 404)","errors":[{"message":"x","domain":"lighthouse","reason":"lighthouseError"}]}}`
const somethingWrongBody = `{"error":{"code":500,"message":"Lighthouse returned error: Something went wrong.","errors":[{"message":"x","domain":"lighthouse","reason":"lighthouseError"}]}}`
const dailyQuotaBody = `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service 'pagespeedonline.googleapis.com' for consumer 'project_number:1'.","status":"RESOURCE_EXHAUSTED"}}`
const badKeyBody = `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`

// fakePSI answers calls from a script, one reply per call (the last repeats).
func fakePSI(t *testing.T, replies []psiReply) (*httptest.Server, *atomic.Int32, chan struct{}) {
	t.Helper()
	h, calls, release := psiScript(t, replies)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, calls, release
}

// psiScript is fakePSI's handler, for a test that calls it in process (scantest.Transport).
func psiScript(t *testing.T, replies []psiReply) (http.Handler, *atomic.Int32, chan struct{}) {
	t.Helper()
	var calls atomic.Int32
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1))
		rep := replies[min(n, len(replies))-1]
		if rep.hang {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		if rep.fixture != "" {
			w.Write(fixture(t, rep.fixture))
			return
		}
		w.Write([]byte(rep.body))
	})
	t.Cleanup(func() { close(release) })
	return h, &calls, release
}

func TestPSIAudit(t *testing.T) {
	ok := psiReply{status: 200, fixture: "home.mobile.json"}
	tests := []struct {
		name      string
		replies   []psiReply
		timeout   time.Duration
		wantCalls int
		wantErr   string // "" means success
		wantWaits []time.Duration
	}{
		{name: "a 200 with a real report gives its page result", replies: []psiReply{ok}, wantCalls: 1},
		{name: "a 429 with Retry-After waits that long, then succeeds",
			replies:   []psiReply{{status: 429, header: map[string]string{"Retry-After": "7"}, body: scantest.QuotaBody}, ok},
			wantCalls: 2, wantWaits: []time.Duration{7 * time.Second}},
		{name: "a 429 without Retry-After waits the quota backoff",
			replies:   []psiReply{{status: 429, body: scantest.QuotaBody}, ok},
			wantCalls: 2, wantWaits: []time.Duration{30 * time.Second}},
		{name: "a 429 on the daily quota is final", replies: []psiReply{{status: 429, body: dailyQuotaBody}},
			wantCalls: 1, wantErr: "PSI daily quota exhausted (HTTP 429)"},
		{name: "a transient 500 is retried", replies: []psiReply{{status: 500, body: somethingWrongBody}, ok}, wantCalls: 2},
		{name: "500s on every attempt give up with the reason",
			replies: []psiReply{{status: 503, body: "<html>oops</html>"}}, wantCalls: 3,
			wantErr: "PSI server error (HTTP 503) (gave up after 3 attempts)"},
		{name: "a Lighthouse runtime error is final and named",
			replies: []psiReply{{status: 400, body: failedDocumentBody}}, wantCalls: 1,
			wantErr: "Lighthouse runtime error FAILED_DOCUMENT_REQUEST: Lighthouse was unable to reliably load"},
		{name: "NO_FCP is final", replies: []psiReply{{status: 400, body: noFCPBody}}, wantCalls: 1,
			wantErr: "Lighthouse runtime error NO_FCP: The page did not paint any content"},
		{name: "a runtime error sent as 500 is final", replies: []psiReply{{status: 500, body: erroredDocumentBody}},
			wantCalls: 1, wantErr: "Lighthouse runtime error ERRORED_DOCUMENT_REQUEST"},
		{name: "garbage JSON in a 200 (an answer cut off) is retried, then a clear error", replies: []psiReply{{status: 200, body: `{"lighthouseResult": [`}},
			wantCalls: 3, wantErr: "PSI answered 200 but the body is not JSON (22 bytes; cut off, or an error page) (gave up after 3 attempts)"},
		{name: "garbage then a result: the retry gets it", replies: []psiReply{{status: 200, body: `<html>`}, ok},
			wantCalls: 2},
		{name: "a bad key is final", replies: []psiReply{{status: 400, body: badKeyBody}}, wantCalls: 1,
			wantErr: "PSI refused the request (HTTP 400): API key not valid"},
		{name: "a hang past the timeout is retried, then reported",
			replies: []psiReply{{hang: true}}, timeout: 50 * time.Millisecond, wantCalls: 3,
			wantErr: "PSI did not answer within 50ms (gave up after 3 attempts)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, calls, _ := fakePSI(t, tt.replies)
			var mu sync.Mutex
			var waits []time.Duration
			var logs bytes.Buffer
			p := New(Config{Endpoint: srv.URL + "/runPagespeed", Key: testKey, Timeout: tt.timeout, Backoff: time.Millisecond,
				Log: slog.New(slog.NewTextHandler(&logs, nil)),
				Sleep: func(ctx context.Context, d time.Duration) error {
					mu.Lock()
					waits = append(waits, d)
					mu.Unlock()
					return nil
				}})
			r, err := p.Audit(context.Background(), "https://example.test/", "mobile")
			if got := int(calls.Load()); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Audit: %v", err)
				}
				if r.Scores.Performance == nil || *r.Scores.Performance != 16 {
					t.Errorf("performance = %v, want 16", r.Scores.Performance)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.wantWaits != nil && !equalDurations(waits, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", waits, tt.wantWaits)
			}
			if err != nil && strings.Contains(err.Error(), testKey) {
				t.Errorf("error leaks the key: %v", err)
			}
			if strings.Contains(logs.String(), testKey) {
				t.Errorf("logs leak the key:\n%s", logs.String())
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The request asks for the page, the strategy, the four categories and carries the key.
func TestPSIRequest(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		w.Write(fixture(t, "blog.desktop.json"))
	}))
	defer srv.Close()
	p := New(Config{Endpoint: srv.URL + "/pagespeedonline/v5/runPagespeed", Key: testKey})
	if _, err := p.Audit(context.Background(), "https://example.test/blog/", "desktop"); err != nil {
		t.Fatal(err)
	}
	q := got.URL.Query()
	if got.URL.Path != "/pagespeedonline/v5/runPagespeed" || q.Get("url") != "https://example.test/blog/" ||
		q.Get("strategy") != "desktop" || q.Get("key") != testKey {
		t.Errorf("request = %s", got.URL)
	}
	if cats := strings.Join(q["category"], ","); cats != "performance,accessibility,best-practices,seo" {
		t.Errorf("categories = %s", cats)
	}
}

// A transport failure's *url.Error carries the full URL, key included; the error must not.
func TestPSIKeyNeverInTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close() // connection refused from now on
	var logs bytes.Buffer
	p := New(Config{Endpoint: endpoint, Key: testKey, Attempts: 2, Backoff: time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	_, err := p.Audit(context.Background(), "https://example.test/", "mobile")
	if err == nil || !strings.Contains(err.Error(), "PSI request failed") {
		t.Fatalf("error = %v", err)
	}
	for what, text := range map[string]string{"error": err.Error(), "logs": logs.String()} {
		if strings.Contains(text, testKey) || strings.Contains(text, "key=") {
			t.Errorf("%s leak the key: %s", what, text)
		}
	}
}

// A 200 whose report carries a runtime error (all category scores null) is a failed audit.
func TestPSIRuntimeErrorIn200(t *testing.T) {
	var resp map[string]any
	if err := json.Unmarshal(fixture(t, "fast.mobile.json"), &resp); err != nil {
		t.Fatal(err)
	}
	lhr := resp["lighthouseResult"].(map[string]any)
	lhr["runtimeError"] = map[string]any{"code": "NO_FCP", "message": "The page did not paint any content."}
	body, _ := json.Marshal(resp)
	srv, calls, _ := fakePSI(t, []psiReply{{status: 200, body: string(body)}})
	_, err := New(Config{Endpoint: srv.URL}).Audit(context.Background(), "https://example.test/fast", "mobile")
	if err == nil || !strings.Contains(err.Error(), "Lighthouse runtime error NO_FCP") || calls.Load() != 1 {
		t.Errorf("error = %v after %d calls, want a final NO_FCP error", err, calls.Load())
	}
}

func TestRateLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewRateLimiter(4, 10*time.Second)
	tests := []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 0}, {0, 0}, {0, 0}, {0, 0}, // the first four go at once
		{0, 10 * time.Second},                // the fifth waits a whole window after the first
		{time.Second, 9 * time.Second},       // the sixth a window after the second
		{25 * time.Second, 0},                // the window has long passed for the third
		{25 * time.Second, 0},                // and the fourth
		{25 * time.Second, 0},                // the fifth went at +10 s
		{25 * time.Second, 0},                // the sixth at +10 s too
		{25 * time.Second, 10 * time.Second}, // then four went at +25 s: the next waits for +35 s
	}
	for i, tt := range tests {
		if got, _, _ := l.reserve(t0.Add(tt.at)); got != tt.want {
			t.Errorf("reserve %d at +%s waits %s, want %s", i, tt.at, got, tt.want)
		}
	}
}

// Whatever the arrivals, no window of the limiter's length holds more than n granted calls:
// the PSI quota is "n per window", not n per window plus a burst.
func TestRateLimiterNeverExceedsNPerWindow(t *testing.T) {
	for _, n := range []int{1, 3, 10, 400} {
		const window = 100 * time.Second
		l := NewRateLimiter(n, window)
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now := t0
		var granted []time.Time
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		for range 20 * n {
			now = now.Add(time.Duration(rng.Int64N(int64(window / time.Duration(n)))))
			wait, _, _ := l.reserve(now)
			granted = append(granted, now.Add(wait))
		}
		if got := scantest.MaxInWindow(granted, window); got > n {
			t.Errorf("n=%d: %d calls granted within one window of %s", n, got, window)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"12", 12 * time.Second, true},
		{"Thu, 01 Jan 2026 00:00:30 GMT", 30 * time.Second, true},
		{"soon", 0, false},
		{"-3", 0, false},
	}
	for _, tt := range tests {
		got, ok := retryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// redact scrubs the key from any text: every key= parameter, and the key itself wherever it
// stands when it is long enough not to be part of ordinary words.
func TestPSIRedact(t *testing.T) {
	tests := []struct{ key, in, want string }{
		{testKey, `Get "https://psi.test/run?url=x&key=` + testKey + `&strategy=mobile": EOF`, `Get "https://psi.test/run?url=x&key=REDACTED&strategy=mobile": EOF`},
		{testKey, "bad key " + testKey + " given", "bad key REDACTED given"},
		{"a b+c/d==", "escaped a+b%2Bc%2Fd%3D%3D here", "escaped REDACTED here"},
		{"e", "the quota of the key=e was exceeded", "the quota of the key=e was exceeded"},
		{"e", `Get "https://psi.test/run?key=e&url=x": refused; the PSI server is down`, `Get "https://psi.test/run?key=REDACTED&url=x": refused; the PSI server is down`},
		{"short", "a short key short", "a short key short"},
		{"", "nothing to hide ?key=abc", "nothing to hide ?key=abc"},
	}
	for _, tt := range tests {
		p := New(Config{Endpoint: "https://psi.test/run", Key: tt.key})
		if got := p.redact(tt.in); got != tt.want {
			t.Errorf("key %q: redact(%q) = %q, want %q", tt.key, tt.in, got, tt.want)
		}
	}
}
