package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// Dispatch is one event bound for one channel of a workspace: the args of a `delivery` job,
// enqueued with its pending delivery row by the `alerts` job. LegacyUserID is what jobs queued
// before channels moved into workspaces carry instead: the account's id, which is its personal
// workspace's id (migration 017).
type Dispatch struct {
	WorkspaceID  string `json:"workspaceId,omitempty"`
	LegacyUserID string `json:"userId,omitempty"`
	ChannelID    string `json:"channelId"`
	Event        Event  `json:"event"`
}

// Workspace is the workspace the dispatch's channel belongs to.
func (d Dispatch) Workspace() string {
	if d.WorkspaceID != "" {
		return d.WorkspaceID
	}
	return d.LegacyUserID
}

// Route binds events to the channels of the site's workspace that receive them: those
// subscribed to the event's type whose sites include the event's site (no sites: every site).
func Route(workspaceID string, events []Event, channels []store.Channel) []Dispatch {
	var out []Dispatch
	for _, e := range events {
		for _, c := range channels {
			if !slices.Contains(c.Events, e.Type) || len(c.SiteIDs) > 0 && !slices.Contains(c.SiteIDs, e.Site.ID) {
				continue
			}
			out = append(out, Dispatch{WorkspaceID: workspaceID, ChannelID: c.ID, Event: e})
		}
	}
	return out
}

// DelivererStore is what a delivery reads and writes, scoped to the channel's workspace, and
// the members an email channel and a failing channel's notice go to.
type DelivererStore interface {
	Channel(ctx context.Context, workspaceID, channelID string) (store.Channel, error)
	RecordDelivery(ctx context.Context, workspaceID string, d store.Delivery) error
	SetChannelFailing(ctx context.Context, workspaceID, channelID string, since *time.Time) (bool, error)
	Members(ctx context.Context, workspaceID string) ([]store.Member, error)
}

// Opener opens the sealed URL and secret of a channel (platform.Keys).
type Opener interface {
	OpenFor(purpose, sealed, owner string) (string, error)
}

// MailFunc sends one plain-text e-mail (the digest's SMTP path).
type MailFunc func(ctx context.Context, to, subject, body string) error

// Deliverer makes one attempt of a Dispatch: the `delivery` job's work. Client is the outbound
// guard's, so every attempt is checked again (a host that now resolves to a private address is
// refused). Mail sends an email channel's messages and tells a workspace's owners that a
// channel is failing; nil (no SMTP_ADDR) logs them instead.
type Deliverer struct {
	Store   DelivererStore
	Keys    Opener
	Client  *http.Client
	Mail    MailFunc
	BaseURL string // for the link to the Notifications page in the failing notice
	Log     *slog.Logger
	Now     func() time.Time
}

func (dl *Deliverer) log() *slog.Logger {
	if dl.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return dl.Log
}

// Attempt sends d for the attempts-th time (first tried at first) and records the delivery. It
// answers when to try again, nil when the delivery is settled: delivered, stopped by the
// receiver or the guard, past the 24-hour window (the channel is then marked failing and its
// workspace's owners e-mailed), or its channel deleted.
func (dl *Deliverer) Attempt(ctx context.Context, d Dispatch, attempts int, first time.Time) (*time.Time, error) {
	ws := d.Workspace()
	return dl.attempt(ctx, ws, d.ChannelID, d.Event.ID, d.Event.Type, attempts, first, func(c store.Channel, now time.Time) (Attempt, bool) {
		return dl.try(ctx, ws, c, d.Event, now)
	})
}

// attempt is Attempt of any event: try makes the one try at channel c.
func (dl *Deliverer) attempt(ctx context.Context, ws, channelID, eventID, eventType string, attempts int, first time.Time,
	try func(c store.Channel, now time.Time) (Attempt, bool)) (*time.Time, error) {
	c, err := dl.Store.Channel(ctx, ws, channelID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // deleted since: nothing to send to
	}
	if err != nil {
		return nil, err
	}
	now := dl.Now()
	rec := store.Delivery{ID: store.NewID(), ChannelID: c.ID, EventID: eventID, EventType: eventType, Attempts: attempts, CreatedAt: first}
	var next *time.Time
	a, opened := try(c, now)
	rec.LastStatus, rec.LastError = a.Status, a.Err
	if !opened {
		rec.State = store.DeliveryFailed
	} else {
		rec.State, next = Next(a, attempts, first, now)
	}
	rec.NextAt = next
	if err := dl.Store.RecordDelivery(ctx, ws, rec); err != nil {
		return next, fmt.Errorf("record delivery: %w", err)
	}
	// A delivery given up marks its channel failing (the page says so, and the workspace's
	// owners are e-mailed once) until one gets through.
	switch rec.State {
	case store.DeliveryFailed:
		turned, ferr := dl.Store.SetChannelFailing(ctx, ws, c.ID, &first)
		if ferr != nil {
			return nil, ferr
		}
		if turned {
			dl.tellOwners(ctx, ws, c, rec)
		}
	case store.DeliveryDelivered:
		if c.FailingSince != nil {
			_, err = dl.Store.SetChannelFailing(ctx, ws, c.ID, nil)
		}
	}
	return next, err
}

// try makes one try at sending e to channel c of the workspace: an e-mail to the members who
// opted in, or a request through the outbound guard. opened is false when the channel's sealed
// URL or secret does not open (PLATFORM_TOKEN_KEY changed): retrying cannot help.
func (dl *Deliverer) try(ctx context.Context, workspaceID string, c store.Channel, e Event, now time.Time) (a Attempt, opened bool) {
	if c.Kind == store.ChannelEmail {
		return dl.email(ctx, workspaceID, e), true
	}
	url, secret, a, opened := dl.open(workspaceID, c)
	if !opened {
		return a, false
	}
	return Send(ctx, dl.Client, c.Kind, url, secret, e, now), true
}

// open opens channel c's sealed URL and signing secret; opened is false, with the Attempt that
// says why, when they do not open (PLATFORM_TOKEN_KEY changed): retrying cannot help.
func (dl *Deliverer) open(workspaceID string, c store.Channel) (url string, secret []byte, a Attempt, opened bool) {
	url, err := dl.Keys.OpenFor(platform.PurposeChannelURL, c.URLSealed, workspaceID)
	s := ""
	if err == nil && c.SecretSealed != "" {
		s, err = dl.Keys.OpenFor(platform.PurposeChannelSecret, c.SecretSealed, workspaceID)
	}
	if err != nil {
		return "", nil, Attempt{Err: "the channel's sealed URL does not open with PLATFORM_TOKEN_KEY: add the channel again"}, false
	}
	return url, []byte(s), Attempt{}, true
}

// Test sends e (a TestEvent) to channel c once, now, and records it as a delivery, delivered on
// success and failed otherwise: the Send test button. It is not retried, and does not mark the
// channel failing.
func (dl *Deliverer) Test(ctx context.Context, workspaceID string, c store.Channel, e Event) (store.Delivery, error) {
	now := dl.Now()
	a, _ := dl.try(ctx, workspaceID, c, e, now)
	rec := store.Delivery{ID: store.NewID(), ChannelID: c.ID, EventID: e.ID, EventType: e.Type, State: store.DeliveryFailed, Attempts: 1,
		LastStatus: a.Status, LastError: a.Err, CreatedAt: now}
	if a.Status >= 200 && a.Status <= 299 {
		rec.State = store.DeliveryDelivered
	}
	return rec, dl.Store.RecordDelivery(ctx, workspaceID, rec)
}

// email sends an email channel's event to every member of the workspace who has regression
// e-mails on, as Email writes it. Without SMTP the messages are logged and the delivery counts
// as made. A failed send is retried like a 5xx (every opted-in member again: at least once).
func (dl *Deliverer) email(ctx context.Context, workspaceID string, e Event) Attempt {
	members, err := dl.Store.Members(ctx, workspaceID)
	if err != nil {
		return Attempt{Err: "reading the workspace's members: " + oneLine(err.Error())}
	}
	subject, body := Email(e)
	var to []string
	for _, m := range members {
		if m.NotifyRegressions && m.Email != "" {
			to = append(to, m.Email)
		}
	}
	if len(to) == 0 {
		return Attempt{Status: http.StatusOK, Err: "no member has regression e-mails on: nothing sent"}
	}
	for _, addr := range to {
		if dl.Mail == nil {
			dl.log().Info("alert e-mail (SMTP_ADDR not set, so logged instead of sent)", "to", addr, "subject", subject, "body", body)
			continue
		}
		if err := dl.Mail(ctx, addr, subject, body); err != nil {
			return Attempt{Err: "sending to " + addr + ": " + oneLine(err.Error())}
		}
	}
	if dl.Mail == nil {
		return Attempt{Status: http.StatusOK, Err: "SMTP_ADDR not set: logged instead of sent"}
	}
	return Attempt{Status: http.StatusOK}
}

// tellOwners e-mails the workspace's owners that a channel stopped receiving alerts: once, when
// the channel turns failing. Without SMTP it is logged. A failed send is logged, not retried.
func (dl *Deliverer) tellOwners(ctx context.Context, workspaceID string, c store.Channel, rec store.Delivery) {
	members, err := dl.Store.Members(ctx, workspaceID)
	if err != nil {
		dl.log().Warn("channel failing: reading the owners", "channel", c.ID, "err", err)
		return
	}
	subject := "SitePulse: the alert channel " + oneLine(c.Name) + " is failing"
	var b strings.Builder
	fmt.Fprintf(&b, "SitePulse could not deliver an alert (%s) to the channel %s (%s) and has stopped trying.\n", rec.EventType, oneLine(c.Name), c.Kind)
	if rec.LastError != "" {
		fmt.Fprintf(&b, "Last answer: %s\n", oneLine(rec.LastError))
	}
	b.WriteString("\nThe channel receives new alerts and is marked failing until one gets through. Check its URL, or delete it and add it again:\n")
	fmt.Fprintf(&b, "%s/workspaces/%s/notifications#channel-%s\n", strings.TrimRight(dl.BaseURL, "/"), workspaceID, c.ID)
	for _, m := range members {
		if m.Role != store.RoleOwner || m.Email == "" {
			continue
		}
		if dl.Mail == nil {
			dl.log().Info("channel failing (SMTP_ADDR not set, so logged instead of e-mailed)", "to", m.Email, "channel", c.ID)
			continue
		}
		if err := dl.Mail(ctx, m.Email, subject, b.String()); err != nil {
			dl.log().Warn("channel failing: e-mailing an owner failed", "to", m.Email, "channel", c.ID, "err", err)
		}
	}
}
