package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// ChannelStore is what the notifications page reads and writes: alert channels and their deliveries.
type ChannelStore interface {
	ChannelsOf(ctx context.Context, userID string) ([]store.Channel, error)
	Channel(ctx context.Context, userID, channelID string) (store.Channel, error)
	CreateChannel(ctx context.Context, c store.Channel) error
	DeleteChannel(ctx context.Context, userID, channelID string) error
	DeliveriesOf(ctx context.Context, userID, channelID string, limit int) ([]store.Delivery, error)
	RecordDelivery(ctx context.Context, userID string, d store.Delivery) error
	SitesOf(ctx context.Context, userID string) ([]store.Site, error)
	Site(ctx context.Context, userID, siteID string) (store.Site, error)
}

// The Notifications page lives under /settings until workspaces land (issue 21 asks for
// /workspaces/{workspaceId}/notifications; the teams branch moves it there with the rest).

// channelKinds are the kinds the form offers: e-mail is the digest, switched on above it.
var channelKinds = []struct{ Kind, Label, Hint string }{
	{store.ChannelSlack, "Slack", "An incoming-webhook URL (https://hooks.slack.com/services/…)"},
	{store.ChannelTeams, "Microsoft Teams", "A Workflows webhook URL (“Post to a channel when a webhook request is received”)"},
	{store.ChannelDiscord, "Discord", "A channel webhook URL (https://discord.com/api/webhooks/…)"},
	{store.ChannelWebhook, "Signed webhook", "Any HTTPS endpoint; each event is a JSON body signed with a secret shown once"},
}

// channelView is a channel as the page shows it: its URL masked, its sites named, its last
// deliveries.
type channelView struct {
	store.Channel
	URL        string
	Sites      []string
	Deliveries []store.Delivery
}

type channelForm struct {
	Name, Kind, URL string
	Events, Sites   []string
}

type notificationsData struct {
	Channels  []channelView
	Sites     []store.Site
	Kinds     any
	Events    []string
	Form      channelForm
	Errors    map[string]string
	NewSecret string // a webhook channel's signing secret, shown in this response only
	NewName   string
	NoKeys    bool // PLATFORM_TOKEN_KEY is not set on Postgres: channels cannot be saved
}

// channelFlashes are the confirmations the page shows after a redirect.
var channelFlashes = map[string]string{
	"channel-added":   "Channel added. Press “Send test” to see a message arrive.",
	"channel-deleted": "Channel deleted. It receives nothing more.",
	"test-sent":       "Test message delivered.",
	"test-failed":     "The test message was not delivered: see the channel's last delivery below.",
}

func (s *server) handleNotificationsPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.notificationsPage(w, r, http.StatusOK, notificationsData{Form: channelForm{Events: []string{store.EventRegressionConfirmed}}},
			channelFlashes[r.URL.Query().Get("done")])
	})
}

// notificationsPage renders the page with d's form state, reading channels, their last
// deliveries and the sites.
func (s *server) notificationsPage(w http.ResponseWriter, r *http.Request, status int, d notificationsData, flash string) {
	ctx, uid := r.Context(), visitorFrom(r.Context()).User.ID
	sites, err := s.Channels.SitesOf(ctx, uid)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	names := map[string]string{}
	for _, site := range sites {
		names[site.ID] = site.Name
	}
	channels, err := s.Channels.ChannelsOf(ctx, uid)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	for _, c := range channels {
		v := channelView{Channel: c, URL: "(sealed)"}
		if s.ChannelKeys != nil && c.URLSealed != "" {
			if u, err := s.ChannelKeys.OpenFor(platform.PurposeChannelURL, c.URLSealed, uid); err == nil {
				v.URL = maskURL(u)
			}
		}
		for _, id := range c.SiteIDs {
			if n, ok := names[id]; ok {
				v.Sites = append(v.Sites, n)
			}
		}
		if v.Deliveries, err = s.Channels.DeliveriesOf(ctx, uid, c.ID, store.ChannelDeliveriesShown); err != nil {
			s.error(w, r, err, "")
			return
		}
		d.Channels = append(d.Channels, v)
	}
	d.Sites, d.Kinds, d.Events, d.NoKeys = sites, channelKinds, store.EventTypes, s.ChannelKeys == nil
	s.render(w, r, status, "notifications", page{Title: "Notifications", Flash: flash, Data: d})
}

// maskURL shows where a channel posts without its credential: scheme, host and the last four
// characters of the path.
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable)"
	}
	tail := u.EscapedPath()
	if len(tail) > 4 {
		tail = tail[len(tail)-4:]
	}
	return u.Scheme + "://" + u.Host + "/…" + tail
}

// handleCreateChannel saves a channel: its URL checked (https, a public address through the
// outbound guard) and sealed; a webhook channel's signing secret is made, sealed, and shown in
// this response only.
func (s *server) handleCreateChannel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, uid := r.Context(), visitorFrom(r.Context()).User.ID
		f := channelForm{Name: r.PostForm.Get("name"), Kind: r.PostForm.Get("kind"), URL: strings.TrimSpace(r.PostForm.Get("url")),
			Events: r.PostForm["events"], Sites: r.PostForm["sites"]}
		fail := func(status int, errs map[string]string) {
			s.notificationsPage(w, r, status, notificationsData{Form: f, Errors: errs}, "")
		}
		if s.ChannelKeys == nil {
			fail(http.StatusServiceUnavailable, map[string]string{"url": "Channels cannot be saved: set PLATFORM_TOKEN_KEY (openssl rand -base64 32) so their URLs are sealed at rest."})
			return
		}
		if !slices.ContainsFunc(channelKinds, func(k struct{ Kind, Label, Hint string }) bool { return k.Kind == f.Kind }) {
			fail(http.StatusUnprocessableEntity, map[string]string{"kind": "Choose Slack, Microsoft Teams, Discord or a signed webhook."})
			return
		}
		if msg := s.channelURLProblem(r, f.URL); msg != "" {
			fail(http.StatusUnprocessableEntity, map[string]string{"url": msg})
			return
		}
		for _, id := range f.Sites {
			if _, err := s.Channels.Site(ctx, uid, store.CanonicalID(id)); err != nil {
				fail(http.StatusUnprocessableEntity, map[string]string{"sites": "Choose sites from the list."})
				return
			}
		}
		c := store.Channel{ID: store.NewID(), UserID: uid, Kind: f.Kind, Name: f.Name, Events: f.Events, CreatedAt: s.Now()}
		for _, id := range f.Sites {
			c.SiteIDs = append(c.SiteIDs, store.CanonicalID(id))
		}
		var err error
		if c.URLSealed, err = s.ChannelKeys.SealFor(platform.PurposeChannelURL, f.URL, uid); err != nil {
			s.error(w, r, err, "")
			return
		}
		var secret string
		if c.Kind == store.ChannelWebhook {
			secret, _ = store.NewSecret("whsec_")
			if c.SecretSealed, err = s.ChannelKeys.SealFor(platform.PurposeChannelSecret, secret, uid); err != nil {
				s.error(w, r, err, "")
				return
			}
		}
		switch err := s.Channels.CreateChannel(ctx, c); {
		case errors.Is(err, store.ErrInvalid):
			fail(http.StatusUnprocessableEntity, store.FieldErrors(err))
			return
		case errors.Is(err, store.ErrLimit):
			fail(http.StatusUnprocessableEntity, map[string]string{"name": "An account has at most 20 channels: delete one first."})
			return
		case err != nil:
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("alert channel added", "user", uid, "channel", c.ID, "kind", c.Kind) // never the URL: it is a credential
		if secret != "" {
			// Shown in this response only, as a new API key is.
			s.notificationsPage(w, r, http.StatusOK, notificationsData{Form: channelForm{Events: []string{store.EventRegressionConfirmed}},
				NewSecret: secret, NewName: c.Name}, "Channel added. Copy its signing secret now: it is not shown again.")
			return
		}
		http.Redirect(w, r, "/settings/notifications?done=channel-added", http.StatusSeeOther)
	})
}

// channelURLProblem says why a channel URL cannot be saved, or "" when it can: an absolute
// https URL (http too with ChannelAllowHTTP) without credentials, whose host the outbound
// guard lets through. The guard checks again at every delivery.
func (s *server) channelURLProblem(r *http.Request, raw string) string {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "Paste the webhook URL."
	case len(raw) > 2000 || err != nil || u.Host == "" || u.User != nil:
		return "Paste the whole webhook URL, starting with https://."
	case u.Scheme != "https" && !(s.ChannelAllowHTTP && u.Scheme == "http"):
		return "The webhook URL must start with https://."
	}
	if _, _, err := s.Guard.CheckURL(r.Context(), raw); err != nil {
		return "SitePulse does not send to this address: " + err.Error()
	}
	return ""
}

// handleTestChannel sends a test message to a channel now, through the outbound guard, and
// records it as a delivery, so the page shows what the receiver answered.
func (s *server) handleTestChannel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, uid := r.Context(), visitorFrom(r.Context()).User.ID
		c, err := s.Channels.Channel(ctx, uid, store.CanonicalID(r.PathValue("channelId")))
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if s.ChannelKeys == nil {
			s.renderError(w, r, http.StatusServiceUnavailable, "Channels cannot be used: PLATFORM_TOKEN_KEY is not set.")
			return
		}
		now := s.Now()
		d := store.Delivery{ID: store.NewID(), ChannelID: c.ID, EventID: "evt_" + store.NewID(), EventType: store.EventTest,
			State: store.DeliveryFailed, Attempts: 1, CreatedAt: now}
		rawURL, uerr := s.ChannelKeys.OpenFor(platform.PurposeChannelURL, c.URLSealed, uid)
		secret, serr := "", error(nil)
		if c.SecretSealed != "" {
			secret, serr = s.ChannelKeys.OpenFor(platform.PurposeChannelSecret, c.SecretSealed, uid)
		}
		if uerr != nil || serr != nil {
			d.LastError = "the channel's sealed URL does not open with PLATFORM_TOKEN_KEY: add the channel again"
		} else {
			e := notify.TestEvent(d.EventID, now, notify.EventRef{ID: uid, Name: "Personal"}, store.Site{}, s.BaseURL+"/settings/notifications")
			a := notify.Send(ctx, s.Guard.Client(), c.Kind, rawURL, []byte(secret), e, now)
			d.LastStatus, d.LastError = a.Status, a.Err
			if a.Status >= 200 && a.Status <= 299 {
				d.State = store.DeliveryDelivered
			}
		}
		if err := s.Channels.RecordDelivery(ctx, uid, d); err != nil {
			s.error(w, r, err, "")
			return
		}
		done := "test-failed"
		if d.State == store.DeliveryDelivered {
			done = "test-sent"
		}
		http.Redirect(w, r, "/settings/notifications?done="+done+"#channel-"+c.ID, http.StatusSeeOther)
	})
}

func (s *server) handleDeleteChannel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid := visitorFrom(r.Context()).User.ID
		if err := s.Channels.DeleteChannel(r.Context(), uid, store.CanonicalID(r.PathValue("channelId"))); err != nil {
			s.error(w, r, err, "")
			return
		}
		http.Redirect(w, r, "/settings/notifications?done=channel-deleted", http.StatusSeeOther)
	})
}
