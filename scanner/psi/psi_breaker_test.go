package psi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"sitepulse/scanner/scantest"
)

// The PSI client tells its breaker what each audit says of PSI, and stops calling while it is
// open: audits then fail with an *UnavailableError, which is no page's failure.
func TestPSIBreaker(t *testing.T) {
	now := time.Date(2030, 1, 15, 12, 0, 0, 0, time.UTC)
	reset := time.Date(2030, 1, 16, 8, 0, 0, 0, time.UTC) // midnight in Los Angeles
	tests := []struct {
		name       string
		replies    []psiReply
		daily      int // PSI_DAILY_LIMIT; 0 none
		audits     int
		wantCalls  int
		wantPage   int           // audits that end as page errors
		wantUnav   int           // audits that end unavailable
		wantUntil  time.Duration // after the audits, unavailable until now+this; 0 closed
		wantReason string
	}{
		{name: "a 403 opens it at once; no more calls while open",
			replies: []psiReply{{status: 403, body: `{"error":{"code":403,"message":"The caller does not have permission"}}`}},
			audits:  3, wantCalls: 1, wantUnav: 3, wantUntil: time.Minute, wantReason: "PSI rejected the API key"},
		{name: "a 400 about the API key is a rejected key too",
			replies: []psiReply{{status: 400, body: badKeyBody}}, audits: 2, wantCalls: 1, wantUnav: 2, wantUntil: time.Minute,
			wantReason: "API key not valid"},
		{name: "a 429 per day opens it until midnight in Los Angeles",
			replies: []psiReply{{status: 429, body: dailyQuotaBody}}, audits: 2, wantCalls: 1, wantUnav: 2, wantUntil: reset.Sub(now),
			wantReason: "PSI daily quota exhausted"},
		{name: "N audits of 500s after their retries open it; the Nth is not a page error",
			replies: []psiReply{{status: 500, body: somethingWrongBody}}, audits: 4, wantCalls: 3 * 2, wantPage: 2, wantUnav: 2,
			wantUntil: time.Minute, wantReason: "3 audits in a row failed"},
		{name: "timeouts after their retries open it",
			replies: []psiReply{{hang: true}}, audits: 3, wantCalls: 3 * 2, wantPage: 2, wantUnav: 1, wantUntil: time.Minute,
			wantReason: "PSI did not answer within"},
		{name: "Lighthouse runtime errors never open it",
			replies: []psiReply{{status: 400, body: noFCPBody}, {status: 400, body: failedDocumentBody}, {status: 500, body: erroredDocumentBody}},
			audits:  6, wantCalls: 6, wantPage: 6},
		{name: "the daily limit reached opens it until the reset without calling",
			replies: []psiReply{{status: 200, fixture: "home.mobile.json"}}, daily: 2, audits: 4, wantCalls: 2, wantUnav: 2,
			wantUntil: reset.Sub(now), wantReason: "PSI_DAILY_LIMIT of 2 calls reached"},
	}
	for _, tt := range tests {
		// In a synctest bubble with PSI in process: the 50 ms timeout is fake time, met by the
		// hanging calls only, however slowly the machine serves a real answer.
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, calls, _ := psiScript(t, tt.replies)
				clock := scantest.NewClock(now)
				b := NewBreaker(BreakerConfig{Failures: 3, OpenFor: time.Minute, Now: clock.Now})
				cfg := Config{Endpoint: "http://psi.test/runPagespeed", Client: &http.Client{Transport: scantest.Transport(h)},
					Key: testKey, Attempts: 2, Timeout: 50 * time.Millisecond,
					Backoff: time.Millisecond, Breaker: b, Now: clock.Now,
					Sleep: func(context.Context, time.Duration) error { return nil }}
				if tt.daily > 0 {
					cfg.Daily = NewDailyCounter(tt.daily)
				}
				p := New(cfg)
				pageErrs, unavailable := 0, 0
				for range tt.audits {
					_, err := p.Audit(context.Background(), "https://example.test/", "mobile")
					var ue *UnavailableError
					switch {
					case errors.As(err, &ue):
						unavailable++
						if !strings.Contains(ue.Reason, tt.wantReason) || strings.Contains(ue.Error(), testKey) {
							t.Errorf("unavailable: %v, want the reason %q without the key", ue, tt.wantReason)
						}
					case err != nil:
						pageErrs++
					}
				}
				if got := int(calls.Load()); got != tt.wantCalls {
					t.Errorf("PSI calls = %d, want %d", got, tt.wantCalls)
				}
				if pageErrs != tt.wantPage || unavailable != tt.wantUnav {
					t.Errorf("%d page errors and %d unavailable, want %d and %d", pageErrs, unavailable, tt.wantPage, tt.wantUnav)
				}
				err := p.Unavailable()
				var ue *UnavailableError
				switch {
				case tt.wantUntil == 0 && err != nil:
					t.Errorf("breaker open after the audits: %v", err)
				case tt.wantUntil != 0 && (!errors.As(err, &ue) || !ue.Until.Equal(now.Add(tt.wantUntil))):
					t.Errorf("after the audits: %v, want unavailable until %v", err, now.Add(tt.wantUntil))
				}
			})
		})
	}
}
