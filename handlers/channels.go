package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// ChannelStore is what the Notifications page reads and writes: a workspace's alert channels,
// their deliveries and sites, and what a Send test needs (notify.DelivererStore).
type ChannelStore interface {
	ChannelsIn(ctx context.Context, userID, workspaceID string) ([]store.Channel, error)
	CreateChannel(ctx context.Context, userID string, c store.Channel) error
	DeleteChannel(ctx context.Context, userID, workspaceID, channelID string) error
	DeliveriesOf(ctx context.Context, userID, workspaceID, channelID string, limit int) ([]store.Delivery, error)
	SitesIn(ctx context.Context, userID, workspaceID string) ([]store.Site, error)
	notify.DelivererStore
}

// The Notifications page of a workspace (issue 21): its alert channels, which its owners and
// editors manage and every member reads, under /workspaces/{workspaceId}/notifications. A
// channel's URL and secret are sealed bound to the workspace's id.

// channelKinds are the kinds the form offers.
var channelKinds = []struct{ Kind, Label, Hint string }{
	{store.ChannelSlack, "Slack", "An incoming-webhook URL (https://hooks.slack.com/services/…)"},
	{store.ChannelTeams, "Microsoft Teams", "A Workflows webhook URL (“Post to a channel when a webhook request is received”)"},
	{store.ChannelDiscord, "Discord", "A channel webhook URL (https://discord.com/api/webhooks/…)"},
	{store.ChannelWebhook, "Signed webhook", "Any HTTPS endpoint; each event is a JSON body signed with a secret shown once"},
	{store.ChannelEmail, "E-mail", "No URL: each event is e-mailed to the members of this workspace who have regression e-mails on"},
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
	Workspace store.Workspace
	CanEdit   bool // an owner or editor: the forms are shown
	Channels  []channelView
	Sites     []store.Site
	Kinds     any
	Events    []string
	Form      channelForm
	Errors    map[string]string
	NoKeys    bool // PLATFORM_TOKEN_KEY is not set on Postgres: channels cannot be saved
}

// channelFlashes are the confirmations the page shows after a redirect.
var channelFlashes = map[string]string{
	"channel-added":   "Channel added. Press “Send test” to see a message arrive.",
	"channel-deleted": "Channel deleted. It receives nothing more.",
	"test-sent":       "Test message delivered.",
	"test-failed":     "The test message was not delivered: see the channel's last delivery below.",
}

// handleSettingsNotifications sends the old address of the channels to the personal
// workspace's Notifications page; each workspace has its own.
func (s *server) handleSettingsNotifications() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/workspaces/"+store.PersonalWorkspace(visitorFrom(r.Context()).User.ID)+"/notifications", http.StatusFound)
	})
}

// notificationsURL is a workspace's Notifications page.
func notificationsURL(workspaceID string) string {
	return "/workspaces/" + workspaceID + "/notifications"
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
	ctx, uid, ws := r.Context(), visitorFrom(r.Context()).User.ID, workspaceFrom(r.Context())
	sites, err := s.Channels.SitesIn(ctx, uid, ws.ID)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	names := map[string]string{}
	for _, site := range sites {
		names[site.ID] = site.Name
	}
	channels, err := s.Channels.ChannelsIn(ctx, uid, ws.ID)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	for _, c := range channels {
		v := channelView{Channel: c, URL: "(sealed)"}
		if c.Kind == store.ChannelEmail {
			v.URL = "members with regression e-mails on"
		}
		if s.ChannelKeys != nil && c.URLSealed != "" {
			if u, err := s.ChannelKeys.OpenFor(platform.PurposeChannelURL, c.URLSealed, ws.ID); err == nil {
				v.URL = maskURL(u)
			}
		}
		for _, id := range c.SiteIDs {
			if n, ok := names[id]; ok {
				v.Sites = append(v.Sites, n)
			}
		}
		if v.Deliveries, err = s.Channels.DeliveriesOf(ctx, uid, ws.ID, c.ID, store.ChannelDeliveriesShown); err != nil {
			s.error(w, r, err, "")
			return
		}
		d.Channels = append(d.Channels, v)
	}
	d.Workspace, d.CanEdit = ws, ws.Role.Can(store.ActEdit)
	d.Sites, d.Kinds, d.Events, d.NoKeys = sites, channelKinds, store.EventTypes, s.ChannelKeys == nil
	s.render(w, r, status, "notifications", page{Title: "Notifications · " + ws.Name, Flash: flash, Data: d})
}

// noKeys opens nothing: channels with a URL cannot be used without PLATFORM_TOKEN_KEY.
type noKeys struct{}

func (noKeys) OpenFor(string, string, string) (string, error) {
	return "", errors.New("PLATFORM_TOKEN_KEY is not set")
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

// handleCreateChannel saves a channel of the workspace: its URL checked (https, a public address
// through the outbound guard) and sealed; a webhook channel's signing secret is made, sealed, and
// shown in this response only. An email channel has no URL.
func (s *server) handleCreateChannel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, uid, ws := r.Context(), visitorFrom(r.Context()).User.ID, workspaceFrom(r.Context())
		// Repeated values are read once each, and capped, before any store read.
		events, eventsOK := formValues(r, "events", len(store.EventTypes))
		sites, sitesOK := formValues(r, "sites", s.MaxSitesPerWorkspace)
		f := channelForm{Name: r.PostForm.Get("name"), Kind: r.PostForm.Get("kind"), URL: strings.TrimSpace(r.PostForm.Get("url")),
			Events: events, Sites: sites}
		fail := func(status int, errs map[string]string) {
			s.notificationsPage(w, r, status, notificationsData{Form: f, Errors: errs}, "")
		}
		if !eventsOK {
			fail(http.StatusUnprocessableEntity, map[string]string{"events": "Choose the events the channel receives."})
			return
		}
		if !sitesOK {
			f.Sites = nil
			fail(http.StatusUnprocessableEntity, map[string]string{"sites": "Choose sites from the list."})
			return
		}
		// The audit log goes where its readers, the owners, send it: an editor may not send it
		// (addresses and who did what) to a receiver of their choosing.
		if slices.Contains(f.Events, store.EventAudit) && !ws.Role.Can(store.ActAudit) {
			fail(http.StatusForbidden, map[string]string{"events": "Only the workspace's owners send its audit log to a webhook."})
			return
		}
		if s.ChannelKeys == nil && f.Kind != store.ChannelEmail {
			fail(http.StatusServiceUnavailable, map[string]string{"url": "Channels with a URL cannot be saved on this SitePulse yet: it has no key to seal their URLs at rest. Whoever runs it must set one (SitePulse's docs/alerts.md says how)."})
			return
		}
		if !slices.ContainsFunc(channelKinds, func(k struct{ Kind, Label, Hint string }) bool { return k.Kind == f.Kind }) {
			fail(http.StatusUnprocessableEntity, map[string]string{"kind": "Choose Slack, Microsoft Teams, Discord, a signed webhook or e-mail."})
			return
		}
		if f.Kind == store.ChannelEmail {
			f.URL = ""
		} else if msg := s.channelURLProblem(r, f.URL); msg != "" {
			fail(http.StatusUnprocessableEntity, map[string]string{"url": msg})
			return
		}
		if len(f.Sites) > 0 { // one read of the workspace's sites, however many the form names
			in, err := s.Channels.SitesIn(ctx, uid, ws.ID)
			if err != nil {
				s.error(w, r, err, "")
				return
			}
			for _, id := range f.Sites {
				if !slices.ContainsFunc(in, func(site store.Site) bool { return site.ID == store.CanonicalID(id) }) {
					fail(http.StatusUnprocessableEntity, map[string]string{"sites": "Choose sites from the list."})
					return
				}
			}
		}
		c := store.Channel{ID: store.NewID(), WorkspaceID: ws.ID, Kind: f.Kind, Name: f.Name, Events: f.Events, CreatedAt: s.Now()}
		for _, id := range f.Sites {
			c.SiteIDs = append(c.SiteIDs, store.CanonicalID(id))
		}
		var err error
		if f.URL != "" {
			if c.URLSealed, err = s.ChannelKeys.SealFor(platform.PurposeChannelURL, f.URL, ws.ID); err != nil {
				s.error(w, r, err, "")
				return
			}
		}
		var secret string
		if c.Kind == store.ChannelWebhook {
			secret, _ = store.NewSecret("whsec_")
			if c.SecretSealed, err = s.ChannelKeys.SealFor(platform.PurposeChannelSecret, secret, ws.ID); err != nil {
				s.error(w, r, err, "")
				return
			}
		}
		switch err := s.Channels.CreateChannel(ctx, uid, c); {
		case errors.Is(err, store.ErrInvalid):
			fail(http.StatusUnprocessableEntity, store.FieldErrors(err))
			return
		case errors.Is(err, store.ErrLimit):
			fail(http.StatusUnprocessableEntity, map[string]string{"name": fmt.Sprintf("A workspace has at most %d channels: delete one first.", store.MaxChannelsPerWorkspace)})
			return
		case err != nil:
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("alert channel added", "user", uid, "workspace", ws.ID, "channel", c.ID, "kind", c.Kind)                                                      // never the URL: it is a credential
		s.audit(ctx, ws.ID, store.LogChannelCreated, c.Name, map[string]string{"channelId": c.ID, "channelKind": c.Kind, "events": strings.Join(c.Events, " ")}) // never the URL
		if secret != "" {
			// Shown once, after the redirect, as a new API key is.
			s.redirectNotice(w, r, notificationsURL(ws.ID)+"#channel-"+c.ID, notice{Text: "Channel added. The signing secret of “" + c.Name + "”:",
				Detail: "copy it now, it is not shown again. Verify each delivery's X-SitePulse-Signature with it:",
				Link:   "#verify-deliveries", LinkTo: "Verifying deliveries, below, says how.",
				Secret: secret, Label: "Signing secret"})
			return
		}
		http.Redirect(w, r, notificationsURL(ws.ID)+"?done=channel-added", http.StatusSeeOther)
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

// handleTestChannel sends a test message to a channel of the workspace now, through the
// outbound guard (an email channel: to its members who opted in), and records it as a delivery,
// so the page shows what the receiver answered.
func (s *server) handleTestChannel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, ws := r.Context(), workspaceFrom(r.Context())
		c, err := s.Channels.Channel(ctx, ws.ID, store.CanonicalID(r.PathValue("channelId")))
		if err != nil {
			s.error(w, r, err, "There is no such channel in this workspace.")
			return
		}
		if s.ChannelKeys == nil && c.Kind != store.ChannelEmail {
			s.renderError(w, r, http.StatusServiceUnavailable, "This channel cannot be used on this SitePulse: it has no key to open its sealed URL. Whoever runs it must set one (SitePulse's docs/alerts.md says how).")
			return
		}
		now := s.Now()
		e := notify.TestEvent("evt_"+store.NewID(), now, notify.EventRef{ID: ws.ID, Name: ws.Name}, store.Site{}, s.BaseURL+notificationsURL(ws.ID))
		var keys notify.Opener = noKeys{}
		if s.ChannelKeys != nil { // a nil *Keys in the interface would not be nil
			keys = s.ChannelKeys
		}
		dl := &notify.Deliverer{Store: s.Channels, Keys: keys, Client: s.Guard.Client(), BaseURL: s.BaseURL, Log: s.Log, Now: s.Now}
		if s.Mail != nil {
			dl.Mail = s.Mail
		}
		d, err := dl.Test(ctx, ws.ID, c, e)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		done := "test-failed"
		if d.State == store.DeliveryDelivered {
			done = "test-sent"
		}
		http.Redirect(w, r, notificationsURL(ws.ID)+"?done="+done+"#channel-"+c.ID, http.StatusSeeOther)
	})
}

func (s *server) handleDeleteChannel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, uid, ws := r.Context(), visitorFrom(r.Context()).User.ID, workspaceFrom(r.Context())
		id := store.CanonicalID(r.PathValue("channelId"))
		c, err := s.Channels.Channel(ctx, ws.ID, id)
		if err == nil && slices.Contains(c.Events, store.EventAudit) && !ws.Role.Can(store.ActAudit) {
			// Nor stop it: the SIEM's feed is the owners' to end.
			s.renderError(w, r, http.StatusForbidden, "Only the workspace's owners delete a channel that receives its audit log.")
			return
		}
		if err == nil {
			err = s.Channels.DeleteChannel(ctx, uid, ws.ID, id)
		}
		if err != nil {
			s.error(w, r, err, "There is no such channel in this workspace.")
			return
		}
		s.audit(ctx, ws.ID, store.LogChannelDeleted, c.Name, map[string]string{"channelId": c.ID, "channelKind": c.Kind})
		http.Redirect(w, r, notificationsURL(ws.ID)+"?done=channel-deleted", http.StatusSeeOther)
	})
}
