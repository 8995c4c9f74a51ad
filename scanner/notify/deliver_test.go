package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/scanner/netguard"
	"sitepulse/store"
)

// receiver is a local stand-in for Slack, Teams, Discord or a webhook endpoint: it answers the
// statuses given, in turn, then 200, and counts what it got.
func receiver(t *testing.T, statuses ...int) (*httptest.Server, *atomic.Int32, netguard.Guard) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i < len(statuses) {
			if statuses[i] == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "120")
			}
			w.WriteHeader(statuses[i])
			w.Write([]byte("no_service"))
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	// The guard refuses loopback; the test exempts this one receiver, as SCAN_ALLOW_PRIVATE never would be set in production for it.
	return srv, &n, netguard.Guard{Exempt: netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))}
}

// deliver runs attempts the way the delivery job does: send, then Next, until the delivery is
// settled; the clock moves to each next attempt instead of waiting for it.
func deliver(t *testing.T, g netguard.Guard, url string) (state string, attempts int, last Attempt) {
	e := sample()[0]
	first := now
	at := now
	for {
		attempts++
		last = Send(context.Background(), g.Client(), KindWebhook, url, []byte("k"), e, at)
		var next *time.Time
		if state, next = Next(last, attempts, first, at); next == nil {
			return state, attempts, last
		}
		at = *next
	}
}

func TestDeliveryRetriesThenSettles(t *testing.T) {
	t.Run("a receiver answering 503 twice then 200 gets the event on the third attempt", func(t *testing.T) {
		srv, n, g := receiver(t, 503, 503)
		state, attempts, _ := deliver(t, g, srv.URL)
		if state != store.DeliveryDelivered || attempts != 3 || n.Load() != 3 {
			t.Errorf("state %s after %d attempts (%d received), want delivered after 3", state, attempts, n.Load())
		}
	})
	t.Run("a receiver answering 429 is asked again when its Retry-After says", func(t *testing.T) {
		srv, _, g := receiver(t, 429)
		a := Send(context.Background(), g.Client(), KindDiscord, srv.URL, nil, sample()[0], now)
		if state, next := Next(a, 1, now, now); a.Status != 429 || state != store.DeliveryPending || next == nil || next.Sub(now) != 2*time.Minute {
			t.Errorf("attempt %+v: %s at %v, want pending 2 minutes later", a, state, next)
		}
	})
	t.Run("a receiver answering 410 stops the delivery at once", func(t *testing.T) {
		srv, n, g := receiver(t, 410)
		state, attempts, last := deliver(t, g, srv.URL)
		if state != store.DeliveryFailed || attempts != 1 || n.Load() != 1 || last.Err != "410 Gone: no_service" {
			t.Errorf("state %s after %d attempts, last %+v; want failed after 1", state, attempts, last)
		}
	})
	t.Run("a receiver that never recovers is given up after 24 hours", func(t *testing.T) {
		statuses := make([]int, 100)
		for i := range statuses {
			statuses[i] = 500
		}
		srv, n, g := receiver(t, statuses...)
		state, attempts, _ := deliver(t, g, srv.URL)
		if state != store.DeliveryFailed || attempts < 5 || int(n.Load()) != attempts {
			t.Errorf("state %s after %d attempts, want failed after several", state, attempts)
		}
	})
	t.Run("a URL on 127.0.0.1 or 169.254.169.254 is refused before any connection", func(t *testing.T) {
		srv, n, _ := receiver(t)
		for _, url := range []string{srv.URL, "http://169.254.169.254/latest/meta-data/"} {
			a := Send(context.Background(), netguard.Guard{}.Client(), KindSlack, url, nil, sample()[0], now)
			if a.Status != 0 || !a.Blocked || !strings.Contains(a.Err, "refused to connect") || strings.Contains(a.Err, "meta-data") {
				t.Errorf("%s: %+v, want refused, without the URL", url, a)
			}
		}
		if n.Load() != 0 {
			t.Errorf("the refused receiver got %d requests", n.Load())
		}
	})
}

func TestNextHonoursRetryAfterAndStatuses(t *testing.T) {
	for _, c := range []struct {
		name      string
		a         Attempt
		attempts  int
		wantState string
		wantWait  time.Duration
	}{
		{"2xx is delivered", Attempt{Status: 204}, 1, store.DeliveryDelivered, 0},
		{"429 waits as long as Retry-After says", Attempt{Status: 429, RetryAfter: 2 * time.Minute}, 1, store.DeliveryPending, 2 * time.Minute},
		{"503 with Retry-After waits for it", Attempt{Status: 503, RetryAfter: 30 * time.Second}, 4, store.DeliveryPending, 30 * time.Second},
		{"a network error backs off attempts^4 seconds", Attempt{Err: "connection refused"}, 3, store.DeliveryPending, 81 * time.Second},
		{"the first retry waits at least 10 seconds", Attempt{Status: 502}, 1, store.DeliveryPending, 10 * time.Second},
		{"backoff stops growing at an hour", Attempt{Status: 500}, 20, store.DeliveryPending, time.Hour},
		{"408 is retried", Attempt{Status: 408}, 1, store.DeliveryPending, 10 * time.Second},
		{"404 stops", Attempt{Status: 404}, 1, store.DeliveryFailed, 0},
		{"401 stops", Attempt{Status: 401}, 1, store.DeliveryFailed, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			state, next := Next(c.a, c.attempts, now, now)
			var wait time.Duration
			if next != nil {
				wait = next.Sub(now)
			}
			if state != c.wantState || wait != c.wantWait {
				t.Errorf("Next = %s, +%v; want %s, +%v", state, wait, c.wantState, c.wantWait)
			}
		})
	}
	if state, _ := Next(Attempt{Status: 503}, 2, now.Add(-DeliveryWindow+5*time.Second), now); state != store.DeliveryFailed {
		t.Errorf("a retry past the 24-hour window: %s, want failed", state)
	}
}
