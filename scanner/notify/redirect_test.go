package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"sitepulse/scanner/netguard"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
)

// The third red team's redirect: a receiver on https answers 302 to plain http, and the signed
// body and its signature followed it. A delivery follows no redirect (SECURITY.md §10): the 3xx
// is the attempt's answer, recorded, and the delivery stops as a 4xx does; the address it
// points to receives nothing.
func TestDeliveryFollowsNoRedirect(t *testing.T) {
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Add(1) }))
	defer target.Close()
	for _, status := range []int{301, 302, 303, 307, 308} {
		var got atomic.Int32
		src := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Add(1)
			http.Redirect(w, r, target.URL+"/stolen?keep=secret", status)
		}))
		// Both servers stand for public hosts (on loopback, so the guard lets them through as it
		// would public ones); the client trusts the test certificate.
		client := netguard.Guard{AllowPrivate: true}.Client()
		client.Transport.(*http.Transport).TLSClientConfig = src.Client().Transport.(*http.Transport).TLSClientConfig
		a := Send(context.Background(), client, KindWebhook, src.URL+"/hook", []byte("whsec_x"), sample()[0], now)
		src.Close()
		if got.Load() != 1 || a.Status != status || !strings.Contains(a.Err, "redirect") || !strings.Contains(a.Err, "not followed") {
			t.Errorf("%d: %d requests, attempt %+v; want one request and the %d recorded as a redirect not followed", status, got.Load(), a, status)
		}
		if strings.Contains(a.Err, "stolen") || strings.Contains(a.Err, "secret") {
			t.Errorf("%d: the recorded answer %q repeats the redirect's path or query", status, a.Err)
		}
		if state, next := Next(a, 1, now, now); state != store.DeliveryFailed || next != nil {
			t.Errorf("%d: Next = %s, %v; want failed, not retried", status, state, next)
		}
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("the redirect's target received %d requests, want none", n)
	}
}

// A receiver that never answers holds an attempt for DeliveryTimeout (10 s), not the guard
// client's 15 s nor longer: on the fake clock the attempt ends exactly then, recorded as
// no answer, and is retried.
func TestDeliveryTimesOutAfterTenSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &http.Client{Transport: scantest.Transport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Hour):
			}
		}))}
		start := time.Now()
		a := Send(context.Background(), slow, KindSlack, "https://hooks.example/slow", nil, sample()[0], now)
		if took := time.Since(start); took != DeliveryTimeout || DeliveryTimeout != 10*time.Second {
			t.Errorf("the attempt took %s (DeliveryTimeout %s), want 10s", took, DeliveryTimeout)
		}
		if a.Status != 0 || !strings.Contains(a.Err, "no answer within 10s") {
			t.Errorf("attempt %+v, want no status and the timeout in words", a)
		}
		if state, next := Next(a, 1, now, now); state != store.DeliveryPending || next == nil {
			t.Errorf("Next = %s, %v; want pending, retried", state, next)
		}
	})
}
