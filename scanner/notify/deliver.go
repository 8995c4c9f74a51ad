package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/netguard"
	"sitepulse/store"
)

// Attempt is what one try at delivering an event told: the receiver's status (0 when no answer
// came), how long it asked to wait (Retry-After), and the error in words, never with the URL
// (a Slack or Discord webhook URL is a credential).
type Attempt struct {
	Status     int
	RetryAfter time.Duration
	Err        string
	// Blocked is true when the outbound guard refused the address: retrying cannot help.
	Blocked bool
}

// DeliveryWindow is how long an event is retried before its delivery is given up.
const DeliveryWindow = 24 * time.Hour

// DeliveryTimeout bounds one attempt, from the connection to the answer's headers and the
// part of its body kept (SECURITY.md §10): a slow receiver holds a delivery worker no longer.
const DeliveryTimeout = 10 * time.Second

// maxBackoff caps the wait between two attempts.
const maxBackoff = time.Hour

// Send posts an event, written for the channel kind, to rawURL through client: the outbound
// guard's (netguard.Guard.Client), so loopback, private and metadata addresses are refused when
// the connection is made unless SCAN_ALLOW_PRIVATE. The webhook kind is signed with secret at now.
// The attempt ends after DeliveryTimeout, and follows no redirect whatever client does: a 3xx is
// the answer, recorded (a redirect from https to plain http would carry the signed body).
func Send(ctx context.Context, client *http.Client, kind, rawURL string, secret []byte, e Event, now time.Time) Attempt {
	body, h, err := Render(kind, e, secret, now)
	if err != nil {
		return Attempt{Err: err.Error()}
	}
	return post(ctx, client, rawURL, body, h, now)
}

// post is Send's request: body with headers h to rawURL, bounded by DeliveryTimeout, no redirect
// followed, the answer read as an Attempt.
func post(ctx context.Context, client *http.Client, rawURL string, body []byte, h http.Header, now time.Time) Attempt {
	ctx, cancel := context.WithTimeout(ctx, DeliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return Attempt{Err: "the channel URL is not a valid URL"}
	}
	req.Header = h
	once := *client
	once.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := once.Do(req)
	if err != nil {
		var blocked *netguard.BlockedError
		isBlocked := errors.As(err, &blocked)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return Attempt{Err: fmt.Sprintf("no answer within %s", DeliveryTimeout)}
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL
		}
		return Attempt{Err: oneLine(err.Error()), Blocked: isBlocked}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	a := Attempt{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), now)}
	switch {
	case isRedirect(resp.StatusCode):
		// Where it pointed, without its path and query: they may repeat the channel's secret.
		to := "elsewhere"
		if loc, err := resp.Location(); err == nil && loc.Host != "" {
			to = loc.Scheme + "://" + loc.Host
		}
		a.Err = resp.Status + ": a redirect to " + oneLine(to) + ", not followed (deliveries follow none): set the channel's URL to where it points"
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		a.Err = strings.TrimSpace(resp.Status + ": " + oneLine(string(snippet)))
		a.Err = strings.TrimSuffix(a.Err, ":")
	}
	return a
}

// isRedirect answers whether status asks the client to go elsewhere.
func isRedirect(status int) bool { return status >= 300 && status <= 399 }

// retryAfter reads Retry-After: seconds or an HTTP date; 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Next decides what follows an attempt, the attempts-th, of a delivery first tried at first:
// delivered on 2xx; failed on a 3xx (redirects are not followed, so asking again gets the same
// answer) and on a 4xx other than 408 and 429 (the receiver will not change its
// mind: a deleted Slack hook answers 404, a Discord one 401, a gone one 410); otherwise (network
// errors, 408, 429, 5xx; but not an address the guard refused) pending until next, the receiver's Retry-After or attempts^4 seconds
// (at least 10 s, at most an hour), and failed once next falls past the 24-hour window.
func Next(a Attempt, attempts int, first, now time.Time) (state string, next *time.Time) {
	switch {
	case a.Status >= 200 && a.Status <= 299:
		return store.DeliveryDelivered, nil
	case a.Blocked, isRedirect(a.Status),
		a.Status >= 400 && a.Status <= 499 && a.Status != http.StatusRequestTimeout && a.Status != http.StatusTooManyRequests:
		return store.DeliveryFailed, nil
	}
	wait := a.RetryAfter
	if wait <= 0 {
		wait = time.Duration(attempts*attempts*attempts*attempts) * time.Second
	}
	wait = min(max(wait, 10*time.Second), maxBackoff)
	at := now.Add(wait)
	if at.After(first.Add(DeliveryWindow)) {
		return store.DeliveryFailed, nil
	}
	return store.DeliveryPending, &at
}

// TestEvent is what the Send test button sends: a sample of the channel's first event, marked
// as a test, so the team sees the real shape.
func TestEvent(id string, now time.Time, workspace EventRef, site store.Site, scanURL string) Event {
	return Event{
		ID: id, Type: store.EventTest, CreatedAt: now.UTC(), Workspace: workspace,
		Site: EventSite{ID: site.ID, Name: site.Name, Domain: site.Domain},
		Scan: EventScan{URL: scanURL, Trigger: "test"},
		Data: EventDetail{Regressions: []analysis.Regression{}, Violations: []analysis.Violation{}, Reason: fmt.Sprintf("A test from SitePulse at %s UTC: this channel works.", now.UTC().Format("2 Jan 15:04"))},
	}
}
