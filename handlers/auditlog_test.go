package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/securitylog"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

var (
	apiKeyShownRe = regexp.MustCompile(`value="(svc_[A-Za-z0-9_-]+)"`)
	reportShownRe = regexp.MustCompile(`value="http://sitepulse.test/report/([^"]+)"`)
)

// TestAuditLogFlow walks the security-relevant flows of a workspace as people do, then reads the
// log: every event is there with its actor, address and User-Agent, no line holds any secret
// the flow made (passwords, API key, session and device cookies, reset, invitation and report
// tokens, the channel's URL token and signing secret), and both exports read back as the
// stored lines.
func TestAuditLogFlow(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			hk := newHook(t)
			ts, own, _ := channelsServerMail(t, st, hk)
			ws := own.userID // team@example.com's personal workspace
			var secrets []string
			secrets = append(secrets, testPassword)

			// A wrong password, then the right one, from another browser.
			other := ts.browser(t)
			resp, _ := other.post("/login", url.Values{"email": {"team@example.com"}, "password": {"not the password 123"}})
			wantStatus(t, resp, http.StatusUnauthorized)
			secrets = append(secrets, "not the password 123")
			resp, _ = other.post("/login", url.Values{"email": {"nobody-here@example.com"}, "password": {"a guess for nobody"}})
			wantStatus(t, resp, http.StatusUnauthorized)
			other.login("team@example.com", testPassword)

			// An API key, shown once.
			_, body := own.postFollow("/settings/api-keys", url.Values{"csrf_token": {own.csrf}, "name": {"CI"}, "workspace": {ws}})
			key := apiKeyShownRe.FindStringSubmatch(body)
			if key == nil {
				t.Fatalf("no API key shown: %.300s", body)
			}
			secrets = append(secrets, key[1])
			keys, err := st.APIKeys(context.Background(), own.userID)
			must(t, err)

			// A signed webhook channel whose URL carries a token.
			_, body = own.postFollow("/workspaces/"+ws+"/channels", url.Values{"csrf_token": {own.csrf}, "name": {"SIEM"}, "kind": {"webhook"},
				"url": {hk.URL + "/in/tok3nInTheURL"}, "events": {store.EventScanFailed}})
			whsec := regexpSecret.FindStringSubmatch(body)
			if whsec == nil {
				t.Fatalf("no signing secret shown: %.300s", body)
			}
			secrets = append(secrets, whsec[1], "tok3nInTheURL")

			// An invitation, accepted.
			_, body = own.postFollow("/workspaces/"+ws+"/invitations", url.Values{"csrf_token": {own.csrf}, "email": {"ed@example.com"}, "role": {"editor"}})
			inv := inviteLinkRe.FindStringSubmatch(body)
			if inv == nil {
				t.Fatalf("no invitation link: %.300s", body)
			}
			secrets = append(secrets, inv[1])
			outboxFor(st).next(t, "ed@example.com")
			ed := ts.browser(t)
			ed.signup("ed@example.com")
			resp, _ = ed.post("/invite/"+inv[1], url.Values{"csrf_token": {ed.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)

			// A site, a report link of its scan, revoked; the site's export.
			resp, _ = own.post("/sites", url.Values{"csrf_token": {own.csrf}, "workspace": {ws}, "name": {"Shop"}, "domain": {"shop.example.com"}})
			wantStatus(t, resp, http.StatusSeeOther)
			sitePath, _, _ := strings.Cut(resp.Header.Get("Location"), "?")
			siteID := strings.TrimPrefix(sitePath, "/sites/")
			scanID := completeScan(t, st, siteID, ts.now)
			_, body = own.postFollow(sitePath+"/scans/"+scanID+"/reports", url.Values{"csrf_token": {own.csrf}, "title": {"For ACME"}, "expires": {"7"}})
			rep := reportShownRe.FindStringSubmatch(body)
			if rep == nil {
				t.Fatalf("no report link: %.300s", body)
			}
			secrets = append(secrets, rep[1])
			reps, err := st.ReportsOf(context.Background(), own.userID)
			must(t, err)
			resp, _ = own.post("/reports/"+reps[0].ID+"/revoke", url.Values{"csrf_token": {own.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)
			resp, _ = own.get("/api/sites/" + siteID + "/export")
			wantStatus(t, resp, http.StatusOK)

			// The password changed, then reset by e-mail (account recovery); the key revoked.
			resp, _ = own.post("/settings/password", url.Values{"csrf_token": {own.csrf}, "current_password": {testPassword}, "new_password": {"a second long password"}})
			wantStatus(t, resp, http.StatusSeeOther)
			secrets = append(secrets, "a second long password")
			outboxFor(st).next(t, "team@example.com") // the notice of the change
			own.refreshCSRF()
			resp, _ = own.post("/settings/api-keys/"+keys[0].ID+"/revoke", url.Values{"csrf_token": {own.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)
			link := other.forgot("team@example.com")
			secrets = append(secrets, strings.TrimPrefix(link, "/password/reset/"))
			resp, _ = other.post(link, url.Values{"password": {"a third long password"}})
			wantStatus(t, resp, http.StatusSeeOther)
			secrets = append(secrets, "a third long password")
			own.login("team@example.com", "a third long password")

			for _, b := range []*browser{own, other, ed} {
				u, _ := url.Parse(b.base)
				for _, c := range b.c.Jar.Cookies(u) {
					if len(c.Value) >= 8 {
						secrets = append(secrets, c.Value)
					}
				}
			}

			lines, err := st.LogOf(context.Background(), store.LogFilter{WorkspaceID: ws, Limit: store.MaxLogPage})
			must(t, err)
			var kinds []string
			for _, l := range lines {
				kinds = append(kinds, l.Kind)
				b, _ := json.Marshal(l)
				for _, s := range secrets {
					if strings.Contains(string(b), s) {
						t.Errorf("a %s line holds the secret %q: %s", l.Kind, s, b)
					}
				}
				if l.IP != "127.0.0.1" || l.UserAgent != "Go-http-client/1.1" {
					t.Errorf("a %s line comes from %q %q, want the test client's address and User-Agent", l.Kind, l.IP, l.UserAgent)
				}
			}
			for _, want := range []string{store.LogSignIn, store.LogSignInFailed, store.LogAPIKeyCreated, store.LogAPIKeyRevoked, store.LogChannelCreated,
				store.LogInvitationCreated, store.LogInvitationAccepted, store.LogSiteAdded, store.LogReportCreated, store.LogReportRevoked, store.LogExport,
				store.LogPasswordChanged, store.LogRecoveryRequest, store.LogPasswordReset} {
				if !slices.Contains(kinds, want) {
					t.Errorf("no %s line in %v", want, kinds)
				}
			}
			for _, l := range lines {
				if l.Kind == store.LogSignInFailed && (l.ActorEmail != "team@example.com" || l.Details["reason"] != "wrong password") {
					t.Errorf("the failed sign-in reads %+v", l)
				}
				if strings.Contains(l.ActorEmail+l.Target, "nobody-here") {
					t.Errorf("an unknown e-mail was recorded: %+v", l)
				}
			}
			// The invitee's account events go to each of their workspaces' logs, this one included.
			edLines, err := st.LogOf(context.Background(), store.LogFilter{WorkspaceID: ws, Actor: "ed@example.com"})
			must(t, err)
			if len(edLines) == 0 || edLines[0].Kind != store.LogInvitationAccepted {
				t.Errorf("ed's lines: %+v", edLines)
			}

			// Both exports read back as the stored lines, in the log's order.
			for _, format := range []string{"csv", "jsonl"} {
				resp, body := own.get("/workspaces/" + ws + "/audit-log/export?format=" + format)
				wantStatus(t, resp, http.StatusOK)
				if ct := resp.Header.Get("Content-Type"); ct != securitylog.Formats[format] {
					t.Errorf("%s Content-Type %q", format, ct)
				}
				read := securitylog.ReadCSV
				if format == "jsonl" {
					read = securitylog.ReadJSONL
				}
				got, err := read(bytes.NewReader([]byte(body)))
				must(t, err)
				want, err := st.LogOf(context.Background(), store.LogFilter{WorkspaceID: ws, Limit: store.MaxLogPage})
				must(t, err)
				want = want[1:] // the newest line records this very export, made after it was read
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s export read back differs:\n got %+v\nwant %+v", format, got, want)
				}
			}
			// A filtered export: only what the filter selects.
			_, body = own.get("/workspaces/" + ws + "/audit-log/export?format=jsonl&kind=auth.")
			got, err := securitylog.ReadJSONL(strings.NewReader(body))
			must(t, err)
			for _, l := range got {
				if !strings.HasPrefix(l.Kind, "auth.") {
					t.Errorf("a filtered export holds %s", l.Kind)
				}
			}
			if len(got) == 0 {
				t.Error("the filtered export is empty")
			}
		})
	}
}

// TestAuditLogPage pages through a long log by keyset and filters it; bad filters are 422.
func TestAuditLogPage(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			ts := newTestServer(t, st)
			own := ts.browser(t)
			own.signup("owner@example.com")
			ws := ts.storeUser(t, "owner@example.com")
			var lines []store.LogEvent
			for i := range 120 {
				lines = append(lines, store.LogEvent{WorkspaceID: ws, ActorID: ws, ActorEmail: "owner@example.com", Kind: store.LogSiteChanged,
					Target: "site-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), At: ts.now.Add(-time.Duration(i/7) * time.Second)}) // ties of 7
			}
			appendLog(t, st, lines...)
			seen, next, pages := 0, "/workspaces/"+ws+"/audit-log?kind=site.changed", 0
			for next != "" {
				resp, body := own.get(next)
				wantStatus(t, resp, http.StatusOK)
				pages++
				seen += strings.Count(body, `<span class="tag mono">site.changed</span>`)
				m := regexp.MustCompile(`href="(/workspaces/[^"]+/audit-log\?[^"]*after=[^"]+)" class="button secondary small">Older`).FindStringSubmatch(body)
				next = ""
				if m != nil {
					next = strings.ReplaceAll(m[1], "&amp;", "&")
				}
			}
			if seen != 120 || pages != 3 {
				t.Errorf("walked %d lines in %d pages, want 120 in 3", seen, pages)
			}
			for _, q := range []string{"kind=made.up", "from=yesterday", "to=2026-13-01", "after=x", "after=1.-2", "actor=" + strings.Repeat("a", 400)} {
				resp, _ := own.get("/workspaces/" + ws + "/audit-log?" + q)
				wantStatus(t, resp, http.StatusUnprocessableEntity)
			}
			for _, q := range []string{"format=xml", "after=1.1"} {
				resp, _ := own.get("/workspaces/" + ws + "/audit-log/export?" + q)
				wantStatus(t, resp, http.StatusUnprocessableEntity)
			}
			resp, body := own.get("/workspaces/" + ws + "/audit-log?actor=someone-else@example.com")
			wantStatus(t, resp, http.StatusOK)
			contains(t, body, "No event matches this filter")
		})
	}
}

func appendLog(t *testing.T, st store.Store, events ...store.LogEvent) {
	t.Helper()
	_, err := st.AppendLog(context.Background(), events...)
	must(t, err)
}

// Only owners send the audit log to a webhook, and only owners stop it: an editor's channel
// subscribed to it is refused (403), as is an editor's deletion of the owners' SIEM channel.
func TestAuditWebhookIsTheOwners(t *testing.T) {
	st := storetest.Backends(t)[0].Open(t)
	hk := newHook(t)
	ts, own := channelsServer(t, st, hk)
	ws := own.userID
	editor := joinAs(t, ts, st, ws, own.userID, "editor@example.com", store.RoleEditor)
	form := func(b *browser, kind string) url.Values {
		return url.Values{"csrf_token": {b.csrf}, "name": {"SIEM"}, "kind": {kind}, "url": {hk.URL + "/siem"}, "events": {store.EventAudit}}
	}
	resp, _ := editor.post("/workspaces/"+ws+"/channels", form(editor, "webhook"))
	wantStatus(t, resp, http.StatusForbidden)
	resp, _ = own.post("/workspaces/"+ws+"/channels", form(own, "slack"))
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	resp, _ = own.post("/workspaces/"+ws+"/channels", form(own, "webhook"))
	wantStatus(t, resp, http.StatusSeeOther)
	chs, err := st.ChannelsIn(context.Background(), own.userID, ws)
	must(t, err)
	if len(chs) != 1 {
		t.Fatalf("channels %+v, want the owner's one", chs)
	}
	resp, _ = editor.post("/workspaces/"+ws+"/channels/"+chs[0].ID+"/delete", url.Values{"csrf_token": {editor.csrf}})
	wantStatus(t, resp, http.StatusForbidden)
	resp, _ = own.post("/workspaces/"+ws+"/channels/"+chs[0].ID+"/delete", url.Values{"csrf_token": {own.csrf}})
	wantStatus(t, resp, http.StatusSeeOther)
}
