package psi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrPSIUnavailable means an audit was not made because the PSI breaker is open: PSI is in
// trouble, refuses the key, or the day's quota is spent. It is no fault of the page; the scan
// waits (its job is snoozed) and resumes where it stopped.
var ErrPSIUnavailable = errors.New("PSI unavailable")

// UnavailableError is ErrPSIUnavailable with the time PSI may be tried again and why.
type UnavailableError struct {
	What   string // what waits; empty is "PSI unavailable"
	Until  time.Time
	Reason string
}

// Error is also the reason a snoozed scan's page shows, so its time reads as the web UI's do.
func (e *UnavailableError) Error() string {
	what := e.What
	if what == "" {
		what = "PSI unavailable"
	}
	return fmt.Sprintf("%s until %s: %s", what, e.Until.UTC().Format("2 Jan 2006, 15:04 UTC"), e.Reason)
}

func (e *UnavailableError) Unwrap() error { return ErrPSIUnavailable }

// RetryAt is when to try again: what a 429's Retry-After says to a pipeline whose scan the
// workspace's daily audits refused.
func (e *UnavailableError) RetryAt() time.Time { return e.Until }

// psiVerdict is what one audit tells the breaker about PSI itself, whatever it says of the page.
type psiVerdict int

const (
	// psiAnswered: PSI did its job, with a result or with Lighthouse's verdict on the page
	// (a runtime error, a 400 lighthouseUserError): PSI is fine.
	psiAnswered psiVerdict = iota
	// psiNeutral says nothing of PSI: the audit was cancelled, or rate limited per minute.
	psiNeutral
	// psiTrouble: 5xx, network failures, timeouts or unusable 200s, retries exhausted.
	psiTrouble
	// psiKeyRejected: 403, or a 400 "API key not valid". Every call will fail the same way.
	psiKeyRejected
	// psiDailyQuota: 429 "per day", or PSI_DAILY_LIMIT reached. Nothing works until the reset.
	psiDailyQuota
)

// BreakerConfig configures a Breaker. Zero values get the defaults noted.
type BreakerConfig struct {
	// Failures is PSI_BREAKER_FAILURES: consecutive audits in trouble that open the breaker. Default 5.
	Failures int
	// OpenFor is PSI_BREAKER_SECONDS: how long it stays open before one probe. Default 60 s.
	OpenFor time.Duration
	Now     func() time.Time
	Log     *slog.Logger
}

// Breaker is the PSI circuit breaker, shared by every worker of a process.
// Closed, audits go through. After Failures consecutive audits that found PSI in trouble it
// opens for OpenFor; a rejected key opens it at once, and a spent daily quota until the quota
// day's reset. Once open time has passed, exactly one audit goes through as a probe while the
// others wait for its verdict: its success closes the breaker and lets them go, its failure
// opens it again and refuses them.
type Breaker struct {
	cfg    BreakerConfig
	mu     sync.Mutex
	fails  int           // consecutive audits in trouble while closed
	until  time.Time     // open until; zero when closed
	reason string        // why it is open
	probe  chan struct{} // non-nil while a half-open probe is in flight; closed on its verdict
}

// NewBreaker returns a closed breaker with cfg's defaults filled in.
func NewBreaker(cfg BreakerConfig) *Breaker {
	if cfg.Failures <= 0 {
		cfg.Failures = 5
	}
	if cfg.OpenFor <= 0 {
		cfg.OpenFor = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Breaker{cfg: cfg}
}

// allow lets an audit through, or refuses it with an *UnavailableError. probe is true for the
// one audit let through half-open: its verdict decides the breaker's state. While a probe is
// in flight the others wait for its verdict, or for ctx.
func (b *Breaker) allow(ctx context.Context) (probe bool, err error) {
	for {
		b.mu.Lock()
		if err := b.refusal(); err != nil {
			b.mu.Unlock()
			return false, err
		}
		switch {
		case b.until.IsZero():
			b.mu.Unlock()
			return false, nil
		case b.probe == nil:
			b.probe = make(chan struct{})
			b.mu.Unlock()
			return true, nil
		}
		wait := b.probe
		b.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
	}
}

// refusal is the error an audit gets now while the breaker is open, or nil once it is closed
// or its open time has passed. Callers hold mu.
func (b *Breaker) refusal() error {
	if !b.until.IsZero() && b.cfg.Now().Before(b.until) {
		return &UnavailableError{Until: b.until, Reason: b.reason}
	}
	return nil
}

// Unavailable is the error an audit would get now, without taking the probe: nil when one may
// go, or may wait for a probe's verdict.
func (b *Breaker) Unavailable() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refusal()
}

// record takes an audit's verdict. It answers whether the breaker is open after it, and if so
// the *UnavailableError of an audit refused now.
func (b *Breaker) record(probe bool, v psiVerdict, reason string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	if probe && b.probe != nil {
		defer close(b.probe) // after the new state is set: the waiters see it
		b.probe = nil
	}
	switch v {
	case psiAnswered:
		if probe {
			b.cfg.Log.Info("PSI breaker closed: the probe succeeded", "was_open_because", b.reason)
			b.until, b.reason = time.Time{}, ""
		}
		if b.until.IsZero() {
			b.fails = 0
		}
	case psiNeutral: // a probe that says nothing leaves the next audit to probe
	case psiTrouble:
		switch {
		case probe:
			b.open(now.Add(b.cfg.OpenFor), "the probe failed: "+reason)
		case b.until.IsZero():
			if b.fails++; b.fails >= b.cfg.Failures {
				b.open(now.Add(b.cfg.OpenFor), fmt.Sprintf("%d audits in a row failed; last: %s", b.fails, reason))
			}
		}
	case psiKeyRejected:
		b.cfg.Log.Error("PSI rejected the API key: it is probably wrong, or the PageSpeed Insights API is not enabled for its Google Cloud project; check PAGESPEED_API_KEY",
			"reason", reason, "audits_paused_for", b.cfg.OpenFor)
		b.open(later(b.until, now.Add(b.cfg.OpenFor)), "PSI rejected the API key: "+reason)
	case psiDailyQuota:
		b.open(later(b.until, QuotaReset(now)), reason)
	}
	if b.until.IsZero() {
		return nil
	}
	return &UnavailableError{Until: b.until, Reason: b.reason}
}

// openUntil opens the breaker until t at least: the daily counter's way to stop every worker.
func (b *Breaker) openUntil(t time.Time, reason string) *UnavailableError {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open(later(b.until, t), reason)
	return &UnavailableError{Until: b.until, Reason: b.reason}
}

// open sets the state and says so once per opening. Callers hold mu.
func (b *Breaker) open(until time.Time, reason string) {
	if until.Equal(b.until) && reason == b.reason {
		return
	}
	b.until, b.reason, b.fails = until, reason, 0
	b.cfg.Log.Warn("PSI breaker open: audits paused", "until", until.UTC().Format(time.RFC3339), "reason", reason)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// State is the breaker's state for the metrics: closed, open (audits refused until its open
// time passes) or half_open (the next audit, or one in flight, is the probe).
func (b *Breaker) State() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.until.IsZero():
		return "closed"
	case b.cfg.Now().Before(b.until):
		return "open"
	}
	return "half_open"
}
