package platform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sitepulse/scanner/scantest"
)

// TestClientRetries: 429 waits its Retry-After, 5xx and timeouts back off, refusals do not retry.
func TestClientRetries(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"sites":[{"id":"s1","displayName":"One","shortName":"one"}]}`)
	}
	tests := []struct {
		name      string
		answers   []func(w http.ResponseWriter, r *http.Request) // one per call; the last repeats
		wantWaits string
		wantErr   error
		wantCalls int
	}{
		{"a 429 waits its Retry-After", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Retry-After", "3"); w.WriteHeader(429) }, ok}, "[3s]", nil, 2},
		{"a 429 beyond the longest wait fails at once", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(429)
			}}, "[]", ErrUnavailable, 1},
		{"5xx backs off and recovers", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) },
			func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) }, ok}, "[500ms 1s 2s]", nil, 4},
		{"5xx that lasts gives up after four tries", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }}, "[500ms 1s 2s]", ErrUnavailable, 4},
		{"a timeout is retried", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, ok}, "[500ms]", nil, 2},
		{"a 401 is a revoked token, not retried", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }}, "[]", ErrUnauthorized, 1},
		{"an answer that is not JSON is retried", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }, ok}, "[500ms]", nil, 2},
	}
	for _, tt := range tests {
		// In a synctest bubble with the API in process: the client's 100 ms timeout is fake
		// time, met by the hanging answer only, however slowly the machine serves the others.
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				calls := 0
				api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					i := min(calls, len(tt.answers)-1)
					calls++
					mu.Unlock()
					if r.Header.Get("Authorization") != "Bearer tok" {
						t.Errorf("Authorization %q", r.Header.Get("Authorization"))
					}
					tt.answers[i](w, r)
				})
				var waits []time.Duration
				c := NewClient(ClientConfig{APIURL: "http://api.test", HTTP: &http.Client{Timeout: 100 * time.Millisecond, Transport: scantest.Transport(api)},
					Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }})
				sites, err := c.Sites(context.Background(), "tok")
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				if err == nil && (len(sites) != 1 || sites[0].Domain() != "one.webflow.io") {
					t.Errorf("sites %+v", sites)
				}
				if got := fmt.Sprint(waits); got != tt.wantWaits || calls != tt.wantCalls {
					t.Errorf("waits %s after %d calls, want %s after %d", got, calls, tt.wantWaits, tt.wantCalls)
				}
			})
		})
	}
}

// TestClientRetriesIdempotentOnly: a 5xx is retried for GET and DELETE only; a POST (a webhook
// the platform may have created, a single-use code) fails at once; a 429 (not acted on) is
// retried for every method.
func TestClientRetriesIdempotentOnly(t *testing.T) {
	calls := func(c *Client) map[string]func() error {
		ctx := context.Background()
		return map[string]func() error{
			"GET":    func() error { _, err := c.Webhooks(ctx, "tok", "s1"); return err },
			"DELETE": func() error { return c.DeleteWebhook(ctx, "tok", "w1") },
			"POST": func() error {
				_, err := c.CreateWebhook(ctx, "tok", "s1", TriggerSitePublish, "https://x/")
				return err
			},
			"Exchange": func() error { _, err := c.Exchange(ctx, "code", "https://x/cb"); return err },
		}
	}
	tests := []struct {
		call      string
		status    int
		wantCalls int
	}{
		{"GET", 500, 4}, {"DELETE", 502, 4}, {"POST", 500, 1}, {"Exchange", 503, 1},
		{"GET", 429, 4}, {"DELETE", 429, 4}, {"POST", 429, 4}, {"Exchange", 429, 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.call, " ", tt.status), func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				mu.Unlock()
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			c := NewClient(ClientConfig{APIURL: srv.URL, Sleep: func(context.Context, time.Duration) error { return nil }})
			if err := calls(c)[tt.call](); !errors.Is(err, ErrUnavailable) {
				t.Errorf("err %v, want ErrUnavailable", err)
			}
			if n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{"": time.Second, "7": 7 * time.Second, "soon": time.Second,
		"Tue, 24 Nov 2026 12:00:30 GMT": 30 * time.Second, "Tue, 24 Nov 2026 11:00:00 GMT": 0} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", h, got, want)
		}
	}
}

func TestDeleteWebhookGoneIsDone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete || r.URL.Path != "/v2/webhooks/w1" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		w.WriteHeader(404)
	}))
	defer srv.Close()
	if err := NewClient(ClientConfig{APIURL: srv.URL}).DeleteWebhook(context.Background(), "tok", "w1"); err != nil {
		t.Errorf("DeleteWebhook of a gone webhook: %v", err)
	}
}
