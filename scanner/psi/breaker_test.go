package psi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"sitepulse/scanner/scantest"
)

// bStep is one step of a breaker script: move the clock, then either ask to go (and check the
// answer) or record an audit's verdict.
type bStep struct {
	advance time.Duration
	ask     bool
	// for ask: want a refusal until wantUntil (zero: let through, as a probe when wantProbe)
	wantUntil time.Duration
	wantProbe bool
	// for a record: the verdict of the audit, which was the probe when probe
	verdict psiVerdict
	probe   bool
}

func TestBreaker(t *testing.T) {
	t0 := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC) // 04:00 in Los Angeles (PST)
	const T = time.Minute
	midnightLA := time.Date(2026, 1, 16, 8, 0, 0, 0, time.UTC) // the next midnight PST, in UTC
	pass := bStep{ask: true}
	probe := bStep{ask: true, wantProbe: true}
	refused := func(until time.Duration) bStep { return bStep{ask: true, wantUntil: until} }
	rec := func(v psiVerdict) bStep { return bStep{verdict: v} }
	recProbe := func(v psiVerdict) bStep { return bStep{verdict: v, probe: true} }
	after := func(d time.Duration, s bStep) bStep { s.advance = d; return s }
	trouble3 := []bStep{rec(psiTrouble), rec(psiTrouble), rec(psiTrouble)}

	tests := []struct {
		name  string
		steps []bStep
	}{
		{"closed, audits go", []bStep{pass, rec(psiAnswered), pass}},
		{"N-1 failures in a row leave it closed", append(trouble3[:2:2], pass)},
		{"N failures in a row open it for T", append(trouble3, refused(T), after(T-time.Second, refused(T)))},
		{"a success in between starts the count again",
			[]bStep{rec(psiTrouble), rec(psiTrouble), rec(psiAnswered), rec(psiTrouble), rec(psiTrouble), pass}},
		{"page-level errors (Lighthouse runtime errors, 400s) are PSI answering: they never open it",
			[]bStep{rec(psiAnswered), rec(psiAnswered), rec(psiAnswered), rec(psiAnswered), pass}},
		{"a per-minute 429 or a cancelled audit neither counts nor resets",
			[]bStep{rec(psiTrouble), rec(psiNeutral), rec(psiTrouble), rec(psiNeutral), rec(psiTrouble), refused(T)}},
		{"after T exactly one probe goes; its success closes it",
			append(trouble3, after(T, probe), recProbe(psiAnswered), pass, pass)},
		{"a failed probe opens it again for T from then",
			append(trouble3, after(T, probe), after(10*time.Second, recProbe(psiTrouble)), refused(T+10*time.Second+T),
				after(T+10*time.Second, probe))},
		{"a cancelled probe lets the next audit probe", append(trouble3, after(T, probe), recProbe(psiNeutral), probe)},
		{"a rejected key opens it at once", []bStep{rec(psiKeyRejected), refused(T), after(T, probe)}},
		{"a spent daily quota opens it until midnight in Los Angeles",
			[]bStep{rec(psiDailyQuota), refused(midnightLA.Sub(t0)), after(midnightLA.Sub(t0)-time.Second, refused(midnightLA.Sub(t0))),
				after(time.Second, probe)}},
		{"a failure of an audit let through before it opened does not extend it",
			append(trouble3, after(10*time.Second, rec(psiTrouble)), refused(T))},
		{"a probe failing on the daily quota opens it until the reset",
			append(trouble3, after(T, probe), recProbe(psiDailyQuota), refused(midnightLA.Sub(t0)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := scantest.NewClock(t0)
			b := NewBreaker(BreakerConfig{Failures: 3, OpenFor: T, Now: clock.Now})
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				if !s.ask {
					b.record(s.probe, s.verdict, "PSI server error (HTTP 503)")
					continue
				}
				gotProbe, err := b.allow(context.Background())
				var ue *UnavailableError
				switch {
				case s.wantUntil == 0 && err != nil:
					t.Fatalf("step %d: refused (%v), want let through", i, err)
				case s.wantUntil == 0 && gotProbe != s.wantProbe:
					t.Fatalf("step %d: probe = %v, want %v", i, gotProbe, s.wantProbe)
				case s.wantUntil != 0 && !errors.As(err, &ue):
					t.Fatalf("step %d: %v, want an *UnavailableError", i, err)
				case s.wantUntil != 0 && !ue.Until.Equal(t0.Add(s.wantUntil)):
					t.Fatalf("step %d: unavailable until %v, want %v", i, ue.Until, t0.Add(s.wantUntil))
				case s.wantUntil != 0 && !errors.Is(err, ErrPSIUnavailable):
					t.Fatalf("step %d: %v is not ErrPSIUnavailable", i, err)
				}
			}
		})
	}
}

// While the probe is in flight the other audits wait for its verdict rather than being turned
// away: a probe that succeeds lets them all go, one that fails refuses them.
func TestBreakerWaitersFollowTheProbe(t *testing.T) {
	synctest.Test(t, testBreakerWaitersFollowTheProbe)
}

func testBreakerWaitersFollowTheProbe(t *testing.T) {
	for _, tt := range []struct {
		verdict psiVerdict
		wantErr bool
	}{{psiAnswered, false}, {psiTrouble, true}} {
		clock := scantest.NewClock(time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC))
		b := NewBreaker(BreakerConfig{Failures: 1, OpenFor: time.Minute, Now: clock.Now})
		b.record(false, psiTrouble, "x")
		clock.Advance(time.Minute)
		if p, err := b.allow(context.Background()); !p || err != nil {
			t.Fatalf("first audit after T: probe %v, %v; want the probe", p, err)
		}
		results := make(chan error, 3)
		for range 3 {
			go func() {
				p, err := b.allow(context.Background())
				if p {
					err = errors.New("a second probe")
				}
				results <- err
			}()
		}
		synctest.Wait() // the three wait for the probe's verdict
		b.record(true, tt.verdict, "x")
		for range 3 {
			if err := <-results; (err != nil) != tt.wantErr || err != nil && !errors.Is(err, ErrPSIUnavailable) {
				t.Errorf("verdict %d: waiter got %v, want error %v", tt.verdict, err, tt.wantErr)
			}
		}
	}
	// A waiter whose job is cancelled stops waiting.
	clock := scantest.NewClock(time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC))
	b := NewBreaker(BreakerConfig{Failures: 1, OpenFor: time.Minute, Now: clock.Now})
	b.record(false, psiTrouble, "x")
	clock.Advance(time.Minute)
	b.allow(context.Background())
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errShutdown)
	if _, err := b.allow(ctx); !errors.Is(err, errShutdown) {
		t.Errorf("cancelled waiter: %v", err)
	}
}

// A rejected key is logged at ERROR with what to check, and never with the key.
func TestBreakerKeyRejectedAlerts(t *testing.T) {
	var logs bytes.Buffer
	b := NewBreaker(BreakerConfig{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	b.record(false, psiKeyRejected, "PSI refused the request (HTTP 403): The caller does not have permission")
	out := logs.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "PageSpeed Insights API is not enabled") ||
		!strings.Contains(out, "PAGESPEED_API_KEY") {
		t.Errorf("logs = %s, want an ERROR naming the key and the API", out)
	}
}

func TestQuotaReset(t *testing.T) {
	_, err := time.LoadLocation("America/Los_Angeles")
	tests := []struct {
		name    string
		now     time.Time
		want    time.Time
		needsTZ bool
	}{
		{name: "winter: the next midnight PST is 08:00 UTC", now: time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC),
			want: time.Date(2026, 1, 16, 8, 0, 0, 0, time.UTC)},
		{name: "winter, just before midnight PST", now: time.Date(2026, 1, 16, 7, 59, 59, 0, time.UTC),
			want: time.Date(2026, 1, 16, 8, 0, 0, 0, time.UTC)},
		{name: "winter, at midnight PST: the day just begun ends the next midnight", now: time.Date(2026, 1, 16, 8, 0, 0, 0, time.UTC),
			want: time.Date(2026, 1, 17, 8, 0, 0, 0, time.UTC)},
		{name: "summer: the next midnight PDT is 07:00 UTC", now: time.Date(2026, 7, 1, 6, 30, 0, 0, time.UTC),
			want: time.Date(2026, 7, 1, 7, 0, 0, 0, time.UTC), needsTZ: true},
		{name: "the day DST starts is 23 hours long", now: time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC),
			want: time.Date(2026, 3, 9, 7, 0, 0, 0, time.UTC), needsTZ: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsTZ && err != nil {
				t.Skipf("no tzdata (%v): the fallback is a fixed PST, an hour late in summer", err)
			}
			if got := QuotaReset(tt.now); !got.Equal(tt.want) {
				t.Errorf("QuotaReset(%v) = %v, want %v", tt.now, got.UTC(), tt.want)
			}
		})
	}
}

func TestDailyCounter(t *testing.T) {
	now := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	reset := time.Date(2026, 1, 16, 8, 0, 0, 0, time.UTC)
	c := NewDailyCounter(3)
	for i := range 3 {
		if ok, _ := c.take(now); !ok {
			t.Fatalf("call %d refused under the limit", i+1)
		}
	}
	if ok, at := c.take(now.Add(time.Hour)); ok || !at.Equal(reset) {
		t.Errorf("4th call: ok %v until %v, want refused until %v", ok, at, reset)
	}
	if spent, at := c.Spent(reset.Add(-time.Nanosecond)); !spent || !at.Equal(reset) {
		t.Errorf("spent just before the reset = %v %v", spent, at)
	}
	if spent, _ := c.Spent(reset); spent {
		t.Error("still spent at the reset")
	}
	if ok, _ := c.take(reset); !ok {
		t.Error("first call of the new quota day refused")
	}
}

// The reason a snoozed scan's page shows gives its time as the web UI writes times.
func TestUnavailableErrorReadsAsTheUI(t *testing.T) {
	e := &UnavailableError{Until: time.Date(2026, 11, 23, 12, 30, 38, 0, time.UTC), Reason: "PSI answered 503 three times"}
	if got, want := e.Error(), "PSI unavailable until 23 Nov 2026, 12:30 UTC: PSI answered 503 three times"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// State follows the breaker for the metrics: closed, open after the failures, half_open once
// its open time has passed, closed again after a probe that PSI answered; the daily counter's
// Used counts the calls of the quota day.
func TestBreakerStateAndDailyUse(t *testing.T) {
	clock := scantest.NewClock(time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC))
	b := NewBreaker(BreakerConfig{Failures: 1, OpenFor: time.Minute, Now: clock.Now})
	want := func(s string) {
		t.Helper()
		if got := b.State(); got != s {
			t.Errorf("state %q, want %q", got, s)
		}
	}
	want("closed")
	b.record(false, psiTrouble, "x")
	want("open")
	clock.Advance(time.Minute)
	want("half_open")
	p, err := b.allow(context.Background())
	if !p || err != nil {
		t.Fatalf("probe %v, %v", p, err)
	}
	b.record(true, psiAnswered, "")
	want("closed")

	d := NewDailyCounter(3)
	if used, limit := d.Used(clock.Now()); used != 0 || limit != 3 {
		t.Errorf("a new day: %d of %d", used, limit)
	}
	d.take(clock.Now())
	d.take(clock.Now())
	if used, _ := d.Used(clock.Now()); used != 2 {
		t.Errorf("used %d, want 2", used)
	}
	if used, _ := d.Used(clock.Now().Add(24 * time.Hour)); used != 0 {
		t.Errorf("the next quota day: used %d, want 0", used)
	}
}
