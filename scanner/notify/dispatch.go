package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// Dispatch is one event bound for one channel: the args of a `delivery` job, enqueued in the
// transaction that completes the scan once the job queue has kinds.
type Dispatch struct {
	UserID    string `json:"userId"`
	ChannelID string `json:"channelId"`
	Event     Event  `json:"event"`
}

// Route binds events to the channels that receive them: those subscribed to the event's type
// whose sites include the event's site (no sites: every site). The e-mail kind is the digest's,
// sent by its own job.
func Route(userID string, events []Event, channels []store.Channel) []Dispatch {
	var out []Dispatch
	for _, e := range events {
		for _, c := range channels {
			if c.Kind == store.ChannelEmail || !slices.Contains(c.Events, e.Type) ||
				len(c.SiteIDs) > 0 && !slices.Contains(c.SiteIDs, e.Site.ID) {
				continue
			}
			out = append(out, Dispatch{UserID: userID, ChannelID: c.ID, Event: e})
		}
	}
	return out
}

// DelivererStore is what a delivery reads and writes, scoped to the channel's owner.
type DelivererStore interface {
	Channel(ctx context.Context, userID, channelID string) (store.Channel, error)
	RecordDelivery(ctx context.Context, userID string, d store.Delivery) error
	SetChannelFailing(ctx context.Context, userID, channelID string, since *time.Time) error
}

// Opener opens the sealed URL and secret of a channel (platform.Keys).
type Opener interface {
	OpenFor(purpose, sealed, owner string) (string, error)
}

// Deliverer makes one attempt of a Dispatch: the `delivery` job's work. Client is the outbound
// guard's, so every attempt is checked again (a host that now resolves to a private address is
// refused).
type Deliverer struct {
	Store  DelivererStore
	Keys   Opener
	Client *http.Client
	Now    func() time.Time
}

// Attempt sends d for the attempts-th time (first tried at first) and records the delivery. It
// answers when to try again, nil when the delivery is settled: delivered, stopped by the
// receiver or the guard, past the 24-hour window (the channel is then marked failing), or its
// channel deleted.
func (dl *Deliverer) Attempt(ctx context.Context, d Dispatch, attempts int, first time.Time) (*time.Time, error) {
	c, err := dl.Store.Channel(ctx, d.UserID, d.ChannelID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // deleted since: nothing to send to
	}
	if err != nil {
		return nil, err
	}
	now := dl.Now()
	rec := store.Delivery{ID: store.NewID(), ChannelID: c.ID, EventID: d.Event.ID, EventType: d.Event.Type, Attempts: attempts, CreatedAt: first}
	url, uerr := dl.Keys.OpenFor(platform.PurposeChannelURL, c.URLSealed, d.UserID)
	secret := ""
	if uerr == nil && c.SecretSealed != "" {
		secret, uerr = dl.Keys.OpenFor(platform.PurposeChannelSecret, c.SecretSealed, d.UserID)
	}
	var next *time.Time
	if uerr != nil {
		rec.State, rec.LastError = store.DeliveryFailed, "the channel's sealed URL does not open with PLATFORM_TOKEN_KEY: add the channel again"
	} else {
		a := Send(ctx, dl.Client, c.Kind, url, []byte(secret), d.Event, now)
		rec.LastStatus, rec.LastError = a.Status, a.Err
		rec.State, next = Next(a, attempts, first, now)
		rec.NextAt = next
	}
	if err := dl.Store.RecordDelivery(ctx, d.UserID, rec); err != nil {
		return next, fmt.Errorf("record delivery: %w", err)
	}
	// A delivery given up marks its channel failing (the page says so) until one gets through.
	switch rec.State {
	case store.DeliveryFailed:
		err = dl.Store.SetChannelFailing(ctx, d.UserID, c.ID, &first)
	case store.DeliveryDelivered:
		if c.FailingSince != nil {
			err = dl.Store.SetChannelFailing(ctx, d.UserID, c.ID, nil)
		}
	}
	return next, err
}
