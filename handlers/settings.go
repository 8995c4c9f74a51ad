package handlers

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"sitepulse/oauth"
	"sitepulse/store"
)

// settingsData is the settings page: API keys (a new one is shown once by a notice), notifications, and the
// OAuth apps the user approved.
type settingsData struct {
	Keys     []store.APIKey
	NewName  string // the name typed, echoed when it was refused
	KeyError string
	Notify   bool
	Apps     []store.Consent
	// Workspaces are those the visitor may make keys for; a key reads its workspace only.
	Workspaces []store.Workspace
	// The account: its address, a new one typed (echoed on errors), its sessions (Current is
	// this browser's), what deleting it would do, and a message per form that was refused
	// ("password", "new_password", "email", "delete").
	Email     string
	EmailForm string
	Sessions  []store.Session
	Current   string
	Use       store.AccountUse
	Errors    map[string]string
	Idle      string // SESSION_IDLE_MINUTES, in words
}

func (s *server) settingsPage(w http.ResponseWriter, r *http.Request, status int, d settingsData, flash string) {
	v := visitorFrom(r.Context())
	keys, err := s.Accounts.APIKeys(r.Context(), v.User.ID)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	apps, err := s.Accounts.Consents(r.Context(), v.User.ID)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	if d.Workspaces, err = s.editableWorkspaces(r.Context(), v.User.ID); err != nil {
		s.error(w, r, err, "")
		return
	}
	if d.Sessions, err = s.Accounts.SessionsOf(r.Context(), v.User.ID, s.Now()); err != nil {
		s.error(w, r, err, "")
		return
	}
	if d.Use, err = s.Accounts.AccountUse(r.Context(), v.User.ID); err != nil {
		s.error(w, r, err, "")
		return
	}
	d.Keys, d.Notify, d.Apps = keys, v.User.NotifyRegressions, apps
	d.Email, d.Current, d.Idle = v.User.Email, v.Session.TokenHash, inWords(s.SessionIdle)
	s.render(w, r, status, "settings", page{Title: "Settings", Flash: flash, Data: d})
}

func (s *server) handleSettings() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.settingsPage(w, r, http.StatusOK, settingsData{}, flashes[r.URL.Query().Get("done")])
	})
}

// flashes are the confirmations a redirect may ask a page to show; the query names one, so no
// text of an attacker's choosing ever appears on a page.
var flashes = map[string]string{
	"key-revoked":      "API key revoked. Requests using it now get 401.",
	"notify-on":        "Regression e-mails turned on.",
	"notify-off":       "Regression e-mails turned off.",
	"app-revoked":      "App disconnected. Its tokens no longer work; it must ask you again to reconnect.",
	"password-changed": "Password changed. Every other session of your account was ended.",
	"email-sent":       "We sent a link to the new address: the change happens when it is followed, within 24 hours. Your current address was told.",
	"email-changed":    "E-mail address changed. Log in with the new one from now on.",
	"sessions-ended":   "Signed out everywhere else: only this browser's session is left.",
}

// inWords says a duration of whole days, hours or minutes the way the settings page does.
func inWords(d time.Duration) string {
	n, unit := int(d/time.Minute), "minute"
	switch {
	case d%(24*time.Hour) == 0:
		n, unit = int(d/(24*time.Hour)), "day"
	case d%time.Hour == 0:
		n, unit = int(d/time.Hour), "hour"
	}
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// keyPrefixLen is how much of a key the settings page shows: "svc_" and 8 characters.
const keyPrefixLen = 12

func (s *server) handleCreateAPIKey() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		name := strings.TrimSpace(r.PostForm.Get("name"))
		if name == "" || utf8.RuneCountInString(name) > 100 {
			s.settingsPage(w, r, http.StatusUnprocessableEntity, settingsData{NewName: name, KeyError: "Give the key a name of 1 to 100 characters, such as \"GitHub Actions\"."}, "")
			return
		}
		// A key reads one workspace, as a viewer: made by an owner or editor of it.
		ws := store.CanonicalID(r.PostForm.Get("workspace"))
		if ws == "" {
			ws = store.PersonalWorkspace(v.User.ID)
		}
		if _, err := s.authorize(r.Context(), ws, store.ActEdit); err != nil {
			s.error(w, r, err, "There is no such workspace in your account.")
			return
		}
		// A key reads unless its creator lets it publish: a key pasted into a CI job or a chat
		// client should not be able to put data on the public web by default.
		scope := store.ScopeRead
		if r.PostForm.Get("publish") == "on" {
			scope = store.ScopeAll
		}
		secret, hash := store.NewSecret("svc_")
		k := store.APIKey{ID: store.NewID(), UserID: v.User.ID, WorkspaceID: ws, Name: name, KeyHash: hash, Prefix: secret[:keyPrefixLen], Scope: scope, CreatedAt: s.Now()}
		if err := s.Accounts.CreateAPIKey(r.Context(), k); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("api key created", "user", v.User.ID, "key", k.ID, "scope", k.Scope)
		s.audit(r.Context(), ws, store.LogAPIKeyCreated, name, map[string]string{"keyId": k.ID, "prefix": k.Prefix, "scope": string(k.Scope)})
		// Shown once, after the redirect (notice.go): a reload shows it no more and makes no key.
		s.redirectNotice(w, r, "/settings#api-keys", notice{Text: "Your new key “" + name + "”.",
			Detail: "Copy it now: it is shown only once and SitePulse keeps only a hash of it.", Secret: secret, Label: "New API key"})
	})
}

func (s *server) handleRevokeAPIKey() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		id := store.CanonicalID(r.PathValue("keyID"))
		keys, err := s.Accounts.APIKeys(r.Context(), v.User.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		i := slices.IndexFunc(keys, func(k store.APIKey) bool { return k.ID == id })
		err = store.ErrNotFound
		if i >= 0 {
			err = s.Accounts.RevokeAPIKey(r.Context(), v.User.ID, id, s.Now())
		}
		if err != nil {
			s.error(w, r, err, "That API key does not exist or was already revoked.")
			return
		}
		s.Log.Info("api key revoked", "user", v.User.ID, "key", id)
		k := keys[i]
		s.audit(r.Context(), k.WorkspaceID, store.LogAPIKeyRevoked, k.Name, map[string]string{"keyId": k.ID, "prefix": k.Prefix})
		http.Redirect(w, r, "/settings?done=key-revoked", http.StatusSeeOther)
	})
}

func (s *server) handleNotifications() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		on := r.PostForm.Get("notify_regressions") == "on"
		if err := s.Accounts.SetNotifyRegressions(r.Context(), v.User.ID, on); err != nil {
			s.error(w, r, err, "")
			return
		}
		done := "notify-off"
		if on {
			done = "notify-on"
		}
		http.Redirect(w, r, "/settings?done="+done, http.StatusSeeOther)
	})
}

// handleRevokeApp disconnects an OAuth app: the user's approval is forgotten and every token the
// app holds for the user is revoked.
func (s *server) handleRevokeApp() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		id := r.PathValue("clientID")
		err := store.ErrNotFound
		if oauth.ValidClientID(id) || store.IsMetadataClientID(id) {
			err = s.Accounts.RevokeConsent(r.Context(), v.User.ID, id, s.Now())
		}
		if err != nil {
			s.error(w, r, err, "That app is not connected to your account.")
			return
		}
		s.Log.Info("connected app revoked", "user", v.User.ID, "client", id)
		s.auditAccount(r.Context(), v.User.ID, v.User.Email, store.LogAppRevoked, map[string]string{"clientId": id})
		http.Redirect(w, r, "/settings?done=app-revoked", http.StatusSeeOther)
	})
}
