// Package psi is the PageSpeed Insights client and what keeps it within Google's limits: the
// rate limiter, the adaptive capacity shared by every worker, the circuit breaker, the daily
// quota counter and the per-account daily audit budget (fairuse.go).
package psi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"sitepulse/store"

	"sitepulse/scanner/lighthouse"
)

// Config configures a PageSpeed Insights client. Zero values get the defaults noted.
type Config struct {
	Endpoint string // PAGESPEED_API_URL
	Key      string // PAGESPEED_API_KEY; sent as key=, never logged or stored
	// Timeout bounds one call; PSI often takes 10-60 s. Default 120 s.
	Timeout time.Duration
	// Attempts is how many calls one audit may make, retries included. Default 3.
	Attempts int
	// Backoff is the first wait after a 5xx or a network failure, doubled on each retry, with
	// ±20% jitter. Default 2 s.
	Backoff time.Duration
	// QuotaBackoff is the wait after a 429 without Retry-After. Default 30 s, as Google advises.
	QuotaBackoff time.Duration
	// MaxWait caps any single wait, Retry-After included. Default 2 min.
	MaxWait time.Duration
	// Limiter is the process-wide rate limit shared by every worker; nil means none.
	Limiter *RateLimiter
	// Capacity, shared by every worker, caps the calls in flight and adapts that cap and the
	// Limiter to the 429s PSI answers. nil means no cap.
	Capacity *Capacity
	// Breaker, shared by every worker, stops audits while PSI is in trouble, refuses the key
	// or has no quota left; they fail with an *UnavailableError. nil means none.
	Breaker *Breaker
	// Daily counts calls per quota day (PSI_DAILY_LIMIT), shared by every worker; reaching it
	// opens the Breaker until the quota resets. nil means no limit.
	Daily *DailyCounter
	// Now is the clock of the daily counter. Default time.Now.
	Now    func() time.Time
	Client *http.Client
	Log    *slog.Logger
	// Sleep waits between retries; tests inject one that records the waits.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client is the PageSpeed Insights v5 client.
type Client struct{ cfg Config }

// New returns a client with cfg's defaults filled in.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 120 * time.Second
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 2 * time.Second
	}
	if cfg.QuotaBackoff <= 0 {
		cfg.QuotaBackoff = 30 * time.Second
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 2 * time.Minute
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{cfg: cfg}
}

// maxPSIBody caps a PSI response: real ones are 0.3-3 MB, screenshots included.
const maxPSIBody = 32 << 20

// psiCategories are the four categories every call asks for.
var psiCategories = []string{"performance", "accessibility", "best-practices", "seo"}

// callOutcome classifies one PSI call.
type callOutcome struct {
	result  store.PageResult
	err     error         // nil on success
	retry   bool          // worth another call
	wait    time.Duration // minimum wait before it (Retry-After, quota backoff)
	verdict psiVerdict    // what it says of PSI itself, for the breaker
	// throttled is a 429 of the per-100-seconds quota, with the Retry-After given (0: none).
	throttled  bool
	retryAfter time.Duration
}

// Audit calls PSI for one page and strategy, retrying 429, 5xx and network failures with
// backoff and jitter, honouring Retry-After. A Lighthouse runtime error (the page could not be
// loaded, did not paint, ...) or any other 4xx is final at once. While the breaker is open, or
// when the audit itself finds PSI unusable (a rejected key, the day's quota spent, the failure
// that opens the breaker), it fails with an *UnavailableError: the page was not audited.
func (p *Client) Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	var last callOutcome
	probe := false // this audit holds the breaker's half-open probe
	for attempt := 1; attempt <= p.cfg.Attempts; attempt++ {
		if p.cfg.Breaker != nil && !probe {
			pr, err := p.cfg.Breaker.allow(ctx)
			if err != nil {
				return store.PageResult{}, err
			}
			probe = pr
		}
		done, err := p.take(ctx)
		if err != nil {
			p.settle(probe, psiNeutral, "")
			return store.PageResult{}, err
		}
		began := time.Now()
		last = p.call(ctx, pageURL, strategy)
		if last.throttled && p.cfg.Capacity != nil {
			p.cfg.Capacity.Throttled(last.retryAfter)
		}
		done(time.Since(began))
		if last.err == nil {
			p.settle(probe, psiAnswered, "")
			return last.result, nil
		}
		if !last.retry || attempt == p.cfg.Attempts || ctx.Err() != nil {
			break
		}
		wait := max(last.wait, jitter(p.cfg.Backoff<<(attempt-1), 0.2))
		wait = min(wait, p.cfg.MaxWait)
		p.cfg.Log.Warn("PSI call failed; retrying", "page", pageURL, "strategy", strategy,
			"attempt", attempt, "wait", wait.Round(time.Millisecond), "err", last.err)
		if err := p.cfg.Sleep(ctx, wait); err != nil {
			break
		}
	}
	err := last.err
	if last.retry && p.cfg.Attempts > 1 {
		err = fmt.Errorf("%w (gave up after %d attempts)", last.err, p.cfg.Attempts)
	}
	verdict := last.verdict
	if ctx.Err() != nil { // stopped mid-way: the retries were not exhausted
		verdict = psiNeutral
	}
	if unavailable := p.settle(probe, verdict, err.Error()); unavailable != nil && verdict >= psiTrouble {
		return store.PageResult{}, unavailable
	}
	return store.PageResult{}, err
}

// take waits for what one call needs: a call slot of the Capacity, then the rate limit, then
// one of the day's calls. done gives the call slot back once the call is answered, with the
// time it took.
func (p *Client) take(ctx context.Context) (done func(took time.Duration), err error) {
	done = func(time.Duration) {}
	if p.cfg.Capacity != nil {
		if done, err = p.cfg.Capacity.call(ctx); err != nil {
			return nil, fmt.Errorf("waiting for a PSI call slot: %w", err)
		}
	}
	if p.cfg.Limiter != nil {
		if err := p.cfg.Limiter.Wait(ctx); err != nil {
			done(0)
			return nil, fmt.Errorf("waiting for the PSI rate limit: %w", context.Cause(ctx))
		}
	}
	if p.cfg.Daily != nil {
		if ok, reset := p.cfg.Daily.take(p.cfg.Now()); !ok {
			done(0)
			return nil, p.dailySpent(reset)
		}
	}
	return done, nil
}

// settle gives the breaker an audit's verdict and returns the *UnavailableError of the
// breaker left open, or nil.
func (p *Client) settle(probe bool, v psiVerdict, reason string) error {
	if p.cfg.Breaker == nil { // every error is the page's, as before there was a breaker
		return nil
	}
	return p.cfg.Breaker.record(probe, v, reason)
}

// dailySpent is the error of a call the daily counter refused, which opens the breaker until
// the reset.
func (p *Client) dailySpent(reset time.Time) error {
	reason := fmt.Sprintf("PSI_DAILY_LIMIT of %d calls reached for this quota day", p.cfg.Daily.limit)
	if p.cfg.Breaker == nil {
		return &UnavailableError{Until: reset, Reason: reason}
	}
	return p.cfg.Breaker.openUntil(reset, reason)
}

// Unavailable is the error an audit would get now (an *UnavailableError) without calling PSI
// or taking the breaker's probe; nil when audits may go. The pool asks before it starts a scan.
func (p *Client) Unavailable() error {
	if p.cfg.Daily != nil {
		if spent, reset := p.cfg.Daily.Spent(p.cfg.Now()); spent {
			return &UnavailableError{Until: reset, Reason: fmt.Sprintf("PSI_DAILY_LIMIT of %d calls reached for this quota day", p.cfg.Daily.limit)}
		}
	}
	if p.cfg.Breaker != nil {
		return p.cfg.Breaker.Unavailable()
	}
	return nil
}

// call makes one request. Its errors never contain the request URL: a *url.Error would carry
// the key in it.
func (p *Client) call(ctx context.Context, pageURL string, strategy store.Strategy) callOutcome {
	q := url.Values{"url": {pageURL}, "strategy": {string(strategy)}, "category": psiCategories}
	if p.cfg.Key != "" {
		q.Set("key", p.cfg.Key)
	}
	u := p.cfg.Endpoint
	if strings.Contains(u, "?") {
		u += "&" + q.Encode()
	} else {
		u += "?" + q.Encode()
	}
	callCtx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodGet, u, nil)
	if err != nil {
		return callOutcome{err: errors.New("PSI request could not be built: check PAGESPEED_API_URL"), verdict: psiNeutral}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return p.transportError(ctx, callCtx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPSIBody+1))
	if err != nil {
		return p.transportError(ctx, callCtx, err)
	}
	if len(body) > maxPSIBody {
		return callOutcome{err: fmt.Errorf("PSI response is larger than %d MiB", maxPSIBody>>20), verdict: psiNeutral}
	}
	if resp.StatusCode == http.StatusOK {
		r, err := lighthouse.ExtractPSI(body)
		if err != nil {
			return p.badResult(body, err)
		}
		return callOutcome{result: r}
	}
	return p.classify(resp, body)
}

// badResult explains a 200 that carries no page result. Lighthouse's own verdict on the page
// (a runtime error such as NO_FCP) is final. Anything else is PSI's or a front end's fault,
// seen in the wild as an HTML error page or a body cut off mid-answer: it is retried, and
// said in words that do not quote decoder internals.
func (p *Client) badResult(body []byte, err error) callOutcome {
	msg := p.redact(err.Error())
	if strings.Contains(msg, "Lighthouse runtime error") || strings.Contains(msg, "Lighthouse returned error") {
		return callOutcome{err: errors.New(msg)}
	}
	if !json.Valid(body) {
		return callOutcome{err: fmt.Errorf("PSI answered 200 but the body is not JSON (%d bytes; cut off, or an error page)", len(body)), retry: true, verdict: psiTrouble}
	}
	if strings.Contains(msg, "cannot unmarshal") {
		msg = "the Lighthouse result has fields of the wrong type"
	} else {
		msg = strings.TrimPrefix(msg, lighthouse.ErrNoResult.Error()+": ")
	}
	return callOutcome{err: fmt.Errorf("PSI answered 200 but the body is not a Lighthouse result: %s", msg), retry: true, verdict: psiTrouble}
}

// transportError explains a failed request without its URL.
func (p *Client) transportError(ctx, callCtx context.Context, err error) callOutcome {
	if ctx.Err() != nil { // the scan was stopped, not PSI's fault
		return callOutcome{err: fmt.Errorf("PSI call cancelled: %w", context.Cause(ctx)), verdict: psiNeutral}
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return callOutcome{err: fmt.Errorf("PSI did not answer within %s", p.cfg.Timeout), retry: true, verdict: psiTrouble}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return callOutcome{err: fmt.Errorf("PSI request failed: %s", p.redact(err.Error())), retry: true, verdict: psiTrouble}
}

// lighthouseCode matches PSI's "Lighthouse returned error: NO_FCP. ..." message.
var lighthouseCode = regexp.MustCompile(`Lighthouse returned error: ([A-Z][A-Z0-9_]+)\b`)

// classify turns a non-200 answer into an outcome: quota and server errors are retried,
// Lighthouse runtime errors and client errors are final. For the breaker, server errors are
// PSI in trouble, a 403 or a 400 about the API key a rejected key, a 429 "per day" the daily
// quota; a Lighthouse runtime error or another 4xx is PSI answering, about the page or the
// request.
func (p *Client) classify(resp *http.Response, body []byte) callOutcome {
	var e struct {
		Error *lighthouse.PSIError `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil && e.Error != nil {
		msg = strings.TrimSpace(p.redact(e.Error.Message))
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	status := resp.StatusCode
	explain := func(prefix string) error {
		if msg == "" {
			return fmt.Errorf("%s (HTTP %d)", prefix, status)
		}
		return fmt.Errorf("%s (HTTP %d): %s", prefix, status, msg)
	}
	switch {
	case lighthouseCode.MatchString(msg):
		code := lighthouseCode.FindStringSubmatch(msg)[1]
		detail := strings.TrimSpace(strings.SplitN(msg, code+".", 2)[1])
		return callOutcome{err: fmt.Errorf("Lighthouse runtime error %s: %s", code, detail)}
	case status == http.StatusTooManyRequests:
		if strings.Contains(strings.ToLower(msg), "per day") {
			return callOutcome{err: explain("PSI daily quota exhausted"), verdict: psiDailyQuota}
		}
		given, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		wait := given
		if !ok {
			wait = p.cfg.QuotaBackoff
		}
		return callOutcome{err: explain("PSI quota exceeded"), retry: true, wait: wait, verdict: psiNeutral,
			throttled: true, retryAfter: min(given, p.cfg.MaxWait)}
	case status >= 500:
		wait, _ := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		return callOutcome{err: explain("PSI server error"), retry: true, wait: wait, verdict: psiTrouble}
	case status == http.StatusForbidden, status == http.StatusBadRequest && strings.Contains(msg, "API key"):
		return callOutcome{err: explain("PSI refused the request"), verdict: psiKeyRejected}
	default:
		return callOutcome{err: explain("PSI refused the request")}
	}
}

// redact removes the API key from text that may quote a URL.
func (p *Client) redact(s string) string {
	if p.cfg.Key == "" {
		return s
	}
	s = keyParam.ReplaceAllString(s, "${1}REDACTED")
	if len(p.cfg.Key) < minBareKey {
		return s
	}
	s = strings.ReplaceAll(s, p.cfg.Key, "REDACTED")
	return strings.ReplaceAll(s, url.QueryEscape(p.cfg.Key), "REDACTED")
}

// keyParam is a key= query parameter, whatever its value.
var keyParam = regexp.MustCompile(`([?&]key=)[^&\s"'<>]*`)

// minBareKey is the shortest key also scrubbed where it stands alone, outside a key= parameter:
// a shorter one (real keys have 39 characters) would mangle ordinary words ("e" in every "the").
const minBareKey = 8

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// RateLimiter allows at most n calls in any window of its length: a sliding window over the
// times of the last n calls, shared by every worker of a process so that together they stay
// under the PSI quota ("400 queries per 100 seconds"). A token bucket of n per window would
// not: a full bucket spent at once and refilled during the same 100 s lets 2n calls through.
// A Capacity lowers it on a 429 (fewer calls per window, none before Retry-After) and raises
// it back.
type RateLimiter struct {
	mu     sync.Mutex
	window time.Duration
	grants []time.Time // ring of the times granted to the last n calls, oldest at next
	next   int
	limit  int       // calls allowed per window now, 1..n
	pause  time.Time // no call before this
	cuts   int       // how many times lower ran: a grant made before the last cut is void
	now    func() time.Time
}

// NewRateLimiter allows n calls per window.
func NewRateLimiter(n int, window time.Duration) *RateLimiter {
	n = max(n, 1)
	return &RateLimiter{window: window, grants: make([]time.Time, n), limit: n, now: time.Now}
}

// backlog is how many calls are waiting for their granted time, how long until the first of
// them is due, and the rate allowed now, in calls per second.
func (l *RateLimiter) backlog() (queued int, next time.Duration, perSecond float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, t := range l.grants {
		if t.After(now) {
			queued++
			if d := t.Sub(now); next == 0 || d < next {
				next = d
			}
		}
	}
	return queued, next, float64(l.limit) / l.window.Seconds()
}

// Warm marks the last window as spent evenly, as by a limiter that has run at its rate: a
// benchmark of a busy service starts from there.
func (l *RateLimiter) Warm(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.grants {
		l.grants[i] = now.Add(-l.window + time.Duration(i)*l.window/time.Duration(len(l.grants)))
	}
}

// configured is the rate it was made with, in calls per second.
func (l *RateLimiter) configured() float64 { return float64(len(l.grants)) / l.window.Seconds() }

// reserve grants the next call a time, at least a window after the call limit calls before
// it and not before a pause, and answers how long the caller must wait for it and which slot
// of the ring holds it. Granted times never decrease, so waiting callers are served in arrival
// order. cuts is the count of lowerings it was granted under.
func (l *RateLimiter) reserve(now time.Time) (wait time.Duration, slot, cuts int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.grants)
	at := later(l.pause, now)
	if oldest := l.grants[(l.next-l.limit+n)%n]; !oldest.IsZero() && oldest.Add(l.window).After(at) {
		at = oldest.Add(l.window)
	}
	at = later(l.grants[(l.next-1+n)%n], at)
	slot = l.next
	l.grants[slot] = at
	l.next = (l.next + 1) % n
	return at.Sub(now), slot, l.cuts
}

// Wait blocks until a call may be made, or ctx ends. A caller woken late (a loaded machine)
// records when it really went, so the call n calls later is spaced from that. One whose grant
// was made before a 429 lowered the limit asks again under the new limit (calls queued at the
// old rate would otherwise all go when the pause ends). A caller that gives up, or asks again,
// keeps its granted time: the slot goes unused, which only ever errs on the side of fewer calls.
func (l *RateLimiter) Wait(ctx context.Context) error {
	wait, slot, cuts := l.reserve(l.now())
	for wait > 0 {
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
		now := l.now()
		l.mu.Lock()
		stale := l.cuts != cuts
		if !stale && now.After(l.grants[slot]) {
			l.grants[slot] = now
		}
		l.mu.Unlock()
		if stale {
			wait, slot, cuts = l.reserve(now)
		} else {
			wait = 0
		}
	}
	return nil
}

// lower is a 429: the calls allowed per window drop to those granted in the last window less
// one (what PSI accepted), and none is made before pause. It returns the new limit.
func (l *RateLimiter) lower(pause time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	granted := 0
	for _, t := range l.grants {
		if !t.IsZero() && t.After(now.Add(-l.window)) {
			granted++
		}
	}
	if granted > 0 { // none when the refused call took longer than a window
		l.limit = min(l.limit, granted)
	}
	l.limit = max(1, l.limit-1)
	l.pause = later(l.pause, pause)
	l.cuts++
	return l.limit
}

// raise climbs the limit back by a tenth of n, and answers whether it is whole again. A 429
// of a concurrency limit also brings the rate down to the calls of the last window, which may
// be few: ten steps bring it back whole whatever it fell to.
func (l *RateLimiter) raise() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.grants)
	l.limit = min(n, l.limit+max(1, n/10))
	return l.limit == n
}

// jitter spreads d by ±frac so retries from many workers do not arrive together.
func jitter(d time.Duration, frac float64) time.Duration {
	return time.Duration(float64(d) * (1 - frac + 2*frac*rand.Float64()))
}

// sleepCtx waits d, or less when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
