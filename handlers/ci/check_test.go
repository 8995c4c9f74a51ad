package ci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
)

// fakeTime is the checker's clock and sleeper: a sleep moves the clock, nothing waits.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeTime() *fakeTime { return &fakeTime{now: time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)} }

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return ctx.Err()
}

// testChecker judges the latest scan of a site of baseURL (the wait path, where retries are
// made), on fake time, printing to out.
func testChecker(baseURL string, client *http.Client, clock *fakeTime, out *bytes.Buffer) *checker {
	cfg := checkConfig{baseURL: baseURL, apiKey: "svc_test", siteID: "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", latest: true, wait: 15 * time.Minute}
	return &checker{checkConfig: cfg, client: client, out: safeWriter{out}, sleep: clock.Sleep, now: clock.Now}
}

// verdictJSON is a judged scan whose budgets hold, as the service answers it.
const verdictJSON = `{"pass":true,"site":"Shop","violations":[],"scanId":"3a731749-0ec3-4a6b-94a9-33270b5fa797","status":"complete","reason":null,"scanUrl":"https://sp.test/s","changes":[]}`

// TestCheckFailsFastWhenTheServiceIsNotThere: a name that does not resolve and a connection
// refused are answers, not a service restarting: the check cannot judge (exit 2) at once,
// saying why, without a retry (issue 43: it retried for 15 minutes).
func TestCheckFailsFastWhenTheServiceIsNotThere(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	noSuchHost := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
	}}}
	for _, tc := range []struct {
		name, url string
		client    *http.Client
		want      string
	}{
		{"connection refused", closed, &http.Client{}, "refused"},
		{"no such host", "https://sitepulse.invalid", noSuchHost, "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, out := newFakeTime(), &bytes.Buffer{}
			err := testChecker(tc.url, tc.client, clock, out).run(t.Context())
			var exit *ExitCode
			if !errors.As(err, &exit) || exit.Code != 2 || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cannot reach") {
				t.Errorf("err = %v, want exit 2 saying the service cannot be reached (%s)", err, tc.want)
			}
			if len(clock.sleeps) > 0 {
				t.Errorf("retried %d times (%v) before giving up:\n%s", len(clock.sleeps), clock.sleeps, out)
			}
		})
	}
}

// failingTransport fails its first requests as a timeout does, then sends them on.
type failingTransport struct {
	timeouts int
	mu       sync.Mutex
}

func (f *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timeouts > 0 {
		f.timeouts--
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestCheckRetriesOnlyOverloadAndTimeouts: a 5xx of a service restarting or behind a proxy, and
// a request that timed out, are tried again after a pause (on the fake clock); a 4xx is an
// answer.
func TestCheckRetriesOnlyOverloadAndTimeouts(t *testing.T) {
	var mu sync.Mutex
	answers := []int{http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusInternalServerError, http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		status := answers[0]
		if len(answers) > 1 {
			answers = answers[1:]
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusOK {
			w.Write([]byte(verdictJSON))
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"error": http.StatusText(status)})
	}))
	defer srv.Close()
	clock, out := newFakeTime(), &bytes.Buffer{}
	c := testChecker(srv.URL, &http.Client{Transport: &failingTransport{timeouts: 1}}, clock, out)
	if err := c.run(t.Context()); err != nil {
		t.Fatalf("err = %v, want the verdict after the retries:\n%s", err, out)
	}
	if len(clock.sleeps) != 4 || !strings.Contains(out.String(), "Shop meets its budgets") {
		t.Errorf("%d pauses (%v), want 4 (a timeout, 502, 503, 500):\n%s", len(clock.sleeps), clock.sleeps, out)
	}

	clock, out = newFakeTime(), &bytes.Buffer{}
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":"forbidden: the key may not read this site"}`))
	}))
	defer forbidden.Close()
	err := testChecker(forbidden.URL, &http.Client{}, clock, out).run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "403") || len(clock.sleeps) > 0 {
		t.Errorf("a 403: err %v after %d pauses, want exit 2 at once", err, len(clock.sleeps))
	}
}

// hostile is what a compromised or spoofed service puts in every string it sends: terminal
// escapes (colours, clearing the screen, a hyperlink, the 8-bit CSI), a carriage return that
// rewrites the line, line breaks followed by GitHub workflow commands and Azure's logging
// command, and bidirectional overrides.
const hostile = "Shop\x1b[2J\x1b]8;;https://evil.test\x07link\x1b]8;;\x07\rfake\n::error file=x::pwned\n::add-mask::\r\n##[error]boom ##vso[task.setvariable variable=x]1 \u202eevil\u202c \u009b31m ::stop-commands::tok"

// TestCheckPrintsWhatTheServiceSendsSafely (issue 44 item 8): nothing the check prints, writes
// to the step summary or the Markdown file, or says when it cannot judge carries a control
// character or a line a runner would take as a command, whatever the service sends; the words
// themselves still show.
func TestCheckPrintsWhatTheServiceSendsSafely(t *testing.T) {
	const scanID = "3a731749-0ec3-4a6b-94a9-33270b5fa797"
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/external/scans", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(`{"scanId":` + str(scanID+hostile) + `,"status":` + str(hostile) + `,"url":` + str("https://sp.test/s"+hostile) + `,"pagesTotal":2}`))
	})
	waited := false
	mux.HandleFunc("POST /api/external/budget-check", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("format") {
		case "markdown":
			w.Write([]byte("### ❌ SitePulse: " + hostile + "\n\n| Metric | Measured |\n|---|---:|\n| LCP | 4.6 s |\n"))
			return
		case "junit":
			w.Write([]byte("<testsuites/>"))
			return
		}
		if !waited {
			waited = true
			w.WriteHeader(http.StatusAccepted)
			w.Write([]byte(`{"scanId":` + str(scanID) + `,"status":` + str(hostile) + `,"pagesDone":1,"pagesTotal":2}`))
			return
		}
		w.Write([]byte(`{"pass":false,"site":` + str(hostile) + `,"scanId":` + str(scanID) + `,"status":"complete","scanUrl":` + str("https://sp.test/s"+hostile) +
			`,"violations":[{"metric":"lcp","threshold":2500,"actual":4600,"operator":"max","pagePath":` + str("/p"+hostile) + `,"strategy":` + str(hostile) + `}],` +
			`"changes":[{"metric":"lcp","pagePath":"/p"}]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	summary, md := filepath.Join(dir, "summary.md"), filepath.Join(dir, "comment.md")
	clock, out := newFakeTime(), &bytes.Buffer{}
	c := testChecker(srv.URL, &http.Client{}, clock, out)
	c.latest, c.summary, c.md = false, summary, md
	err := c.run(t.Context())
	var exit *ExitCode
	if !errors.As(err, &exit) || exit.Code != 1 {
		t.Fatalf("err = %v, want exit 1 (a budget broken):\n%s", err, out)
	}
	s, _ := os.ReadFile(summary)
	m, _ := os.ReadFile(md)
	for name, text := range map[string]string{"stdout": out.String(), "the step summary": string(s), "the Markdown file": string(m)} {
		assertSafe(t, name, text, true)
		if !strings.Contains(text, "pwned") || !strings.Contains(text, "Shop") {
			t.Errorf("%s lost the words themselves:\n%s", name, text)
		}
	}
	if !strings.Contains(string(s), "| LCP | 4.6 s |\n") {
		t.Errorf("the summary's table was changed:\n%s", s)
	}

	// The reason it cannot judge, which main prints, is one safe line too.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write([]byte(`{"error":` + str(hostile) + `}`))
	}))
	defer bad.Close()
	err = testChecker(bad.URL, &http.Client{}, newFakeTime(), &bytes.Buffer{}).run(t.Context())
	if err == nil {
		t.Fatal("a 422 was judged")
	}
	assertSafe(t, "the reason it cannot judge", err.Error(), false)
}

// assertSafe fails when text has a control character (but the line breaks of a multi-line
// text), a bidirectional override, a line a runner would read as a workflow or logging command,
// or "::" anywhere.
func assertSafe(t *testing.T, name, text string, lines bool) {
	t.Helper()
	for _, r := range text {
		if (unicode.IsControl(r) && !(lines && r == '\n')) || unicode.In(r, unicode.Bidi_Control) {
			t.Errorf("%s carries %U:\n%q", name, r, text)
			return
		}
	}
	if strings.Contains(text, "::") || strings.Contains(text, "##[") || strings.Contains(text, "##vso[") {
		t.Errorf("%s carries a command prefix:\n%s", name, text)
	}
}
