package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"sitepulse/scanner/platform"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The secrets the access tests post: none may be shown back, logged or stored in the clear.
var accessSecrets = []string{"basic-user-3f9", "basic-pw-1c7e", "basic-pw-2d8f", "cookie-val-8a2b", "form-pw-6e4d", "Proof-Text-91ab"}

// accessFixture is the API fixture with signed-in audits on (AUDIT_BACKEND=lighthouse), a key
// ring, and a DEBUG log.
type accessFixture struct {
	*apiFixture
	keys *platform.Keys
	logs *scantest.LogBuffer
}

func newAccessFixture(t *testing.T, st store.Store, with func(*Deps)) *accessFixture {
	f := &accessFixture{keys: platform.RandomKeys(), logs: &scantest.LogBuffer{}}
	f.apiFixture = newAPIFixtureWith(t, st, func(d *Deps) {
		d.SignedInAudits, d.ChannelKeys = true, f.keys
		d.Log = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		if with != nil {
			with(d)
		}
	})
	return f
}

// post sends the access form of A's site as A.
func (f *accessFixture) post(t *testing.T, form url.Values) (*http.Response, string) {
	t.Helper()
	form.Set("csrf_token", f.a.csrf)
	return f.do(t, "POST", "/sites/"+f.a.siteID+"/access", "application/x-www-form-urlencoded", form.Encode(), cookie(f.a.session))
}

// stored is A's site's setting as stored, and opened.
func (f *accessFixture) stored(t *testing.T) (store.SiteAccess, store.Access) {
	t.Helper()
	sa, err := f.st.SiteAccess(context.Background(), f.a.userID, f.a.siteID)
	must(t, err)
	if sa.Kind == store.AccessNone {
		return sa, store.Access{Kind: store.AccessNone}
	}
	plain, err := f.keys.OpenFor(platform.PurposeSiteAccess, sa.Sealed, store.AccessSealedFor(f.a.siteID, "https://demo.sitepulse.test"))
	must(t, err)
	a, err := store.DecodeAccess(plain)
	must(t, err)
	return sa, a
}

// noSecret fails when text holds one of the posted secrets.
func noSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range accessSecrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q", where, s)
		}
	}
}

// An owner sets a site's access setting on its edit page: each kind is stored sealed (bound to
// the site), never shown back (a "set" marker and an empty field that keeps it), replaced field
// by field, refused with the field's reason when invalid, and removed with kind none; no secret
// reaches the page, the log at DEBUG, the export or an MCP answer.
func TestSiteAccessSetting(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newAccessFixture(t, b.Open(t), nil)
			origin := "https://demo.sitepulse.test"

			resp, _ := f.post(t, url.Values{"kind": {"basic"}, "username": {"basic-user-3f9"}, "password": {"basic-pw-1c7e"}})
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sites/"+f.a.siteID+"/edit?done=access-saved#access" {
				t.Fatalf("save basic: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			sa, a := f.stored(t)
			if sa.Kind != store.AccessBasic || a.Username != "basic-user-3f9" || a.Password != "basic-pw-1c7e" {
				t.Errorf("stored %v, opened %+v", sa.Kind, a)
			}
			noSecret(t, "the stored setting", sa.Sealed)
			for _, owner := range []string{store.AccessSealedFor(f.b.siteID, origin), store.AccessSealedFor(f.a.siteID, "https://evil.example"), f.a.siteID} {
				if _, err := f.keys.OpenFor(platform.PurposeSiteAccess, sa.Sealed, owner); err == nil {
					t.Errorf("the sealed setting opens bound to %q: only to its site and origin", owner)
				}
			}

			_, page := f.do(t, "GET", "/sites/"+f.a.siteID+"/edit?done=access-saved", "", "", cookie(f.a.session))
			for _, want := range []string{"Private pages", "signed in with HTTP basic auth", `<span class="tag set">set</span>`, "Set: type to replace",
				"Access setting saved", origin} {
				if !strings.Contains(page, want) {
					t.Errorf("edit page lacks %q", want)
				}
			}
			noSecret(t, "the edit page", page)

			// The password alone replaced: the user name set is kept.
			f.post(t, url.Values{"kind": {"basic"}, "username": {""}, "password": {"basic-pw-2d8f"}})
			if _, a := f.stored(t); a.Username != "basic-user-3f9" || a.Password != "basic-pw-2d8f" {
				t.Errorf("after replacing the password: %+v", a)
			}

			for _, tt := range []struct {
				name  string
				form  url.Values
				field string
			}{
				{"a cookie line without a value", url.Values{"kind": {"cookies"}, "cookies": {"session"}}, "Line 1 is not of the form name=value."},
				{"a cookie value with a semicolon", url.Values{"kind": {"cookies"}, "cookies": {"session=a;b"}}, "Line 1 is not a cookie"},
				{"a login form on another origin", url.Values{"kind": {"form"}, "login_url": {"https://evil.example/login"}, "fields": {"p=form-pw-6e4d"}, "proof": {"x"}},
					"The login form must be on the site&#39;s own origin, " + origin},
				{"a form without fields", url.Values{"kind": {"form"}, "login_url": {origin + "/login"}, "proof": {"x"}}, "Enter at least one line of name=value."},
				{"an unknown kind", url.Values{"kind": {"header"}}, "Choose none, basic auth, cookies or a login form."},
				{"cookies chosen with none typed", url.Values{"kind": {"cookies"}}, "Enter at least one line"},
			} {
				resp, body := f.post(t, tt.form)
				if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, tt.field) {
					t.Errorf("%s: %d, want 422 with %q", tt.name, resp.StatusCode, tt.field)
				}
				noSecret(t, tt.name+"'s page", body)
			}
			if _, a := f.stored(t); a.Password != "basic-pw-2d8f" {
				t.Errorf("a refused setting changed the stored one: %+v", a.Kind)
			}

			f.post(t, url.Values{"kind": {"form"}, "login_url": {origin + "/login"}, "fields": {"user=ada\npassword=form-pw-6e4d"}, "proof": {"Proof-Text-91ab"}})
			if _, a := f.stored(t); a.Kind != store.AccessForm || a.LoginURL != origin+"/login" || len(a.Fields) != 2 || a.Proof != "Proof-Text-91ab" {
				t.Errorf("form setting: %+v", a.Fields)
			}
			_, page = f.do(t, "GET", "/sites/"+f.a.siteID+"/edit", "", "", cookie(f.a.session))
			if !strings.Contains(page, `value="`+origin+`/login"`) || !strings.Contains(page, "signed in with a login form") {
				t.Error("the edit page does not show the login form's address and kind")
			}
			noSecret(t, "the edit page", page)
			f.post(t, url.Values{"kind": {"cookies"}, "cookies": {"session=cookie-val-8a2b"}})

			// No other surface reads it.
			_, export := f.do(t, "GET", "/api/sites/"+f.a.siteID+"/export?format=json", "", "", cookie(f.a.session))
			noSecret(t, "the export", export)
			_, answer := f.do(t, "POST", "/api/mcp", "application/json",
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sites","arguments":{}}}`, bearer(f.a.accessToken))
			if !strings.Contains(answer, f.a.siteID) {
				t.Errorf("MCP list_sites does not list the site: %.300s", answer)
			}
			noSecret(t, "the MCP answer", answer)
			_, sitePage := f.do(t, "GET", "/sites/"+f.a.siteID, "", "", cookie(f.a.session))
			noSecret(t, "the site page", sitePage)

			resp, _ = f.post(t, url.Values{"kind": {"none"}})
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("remove: %d", resp.StatusCode)
			}
			if sa, _ := f.stored(t); sa.Kind != store.AccessNone {
				t.Errorf("after kind none: %v", sa.Kind)
			}
			if !strings.Contains(f.logs.String(), "site access set") {
				t.Errorf("the log does not record the change:\n%s", f.logs.String())
			}
			noSecret(t, "the DEBUG log", f.logs.String())
		})
	}
}

// With PSI as the backend a setting is refused, 422, with a sentence naming
// AUDIT_BACKEND=lighthouse; removing one is always possible. Without PLATFORM_TOKEN_KEY nothing
// can be sealed: 503. The demo site's replayed audits cannot sign in. A post without the form's
// CSRF token is refused, 403.
func TestSiteAccessRefusals(t *testing.T) {
	st := storetest.Backends(t)[0].Open(t)
	basic := url.Values{"kind": {"basic"}, "username": {"basic-user-3f9"}, "password": {"basic-pw-1c7e"}}
	psi := newAccessFixture(t, st, func(d *Deps) { d.SignedInAudits = false })
	resp, body := psi.post(t, basic)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "own Lighthouse, which it is not set up for") {
		t.Errorf("with PSI: %d, want 422 saying it needs this SitePulse's own Lighthouse", resp.StatusCode)
	}
	if resp, _ := psi.post(t, url.Values{"kind": {"none"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("removing with PSI: %d, want 303", resp.StatusCode)
	}
	_, page := psi.do(t, "GET", "/sites/"+psi.a.siteID+"/edit", "", "", cookie(psi.a.session))
	if !strings.Contains(page, "Signed-in audits need audits run by this SitePulse") {
		t.Error("the edit page does not say signed-in audits need the local Lighthouse backend")
	}

	noKeys := newAccessFixture(t, storetest.Backends(t)[0].Open(t), func(d *Deps) { d.ChannelKeys = nil })
	if resp, body := noKeys.post(t, basic); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "no key to seal them") {
		t.Errorf("without keys: %d, want 503 saying there is no sealing key", resp.StatusCode)
	}

	replayed := newAccessFixture(t, storetest.Backends(t)[0].Open(t), func(d *Deps) { d.Replayed = func(store.Site) bool { return true } })
	if resp, body := replayed.post(t, basic); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "replayed") {
		t.Errorf("the demo site: %d, want 422", resp.StatusCode)
	}
	lighthouse := newAccessFixture(t, storetest.Backends(t)[0].Open(t), nil)
	noToken := url.Values{"kind": {"basic"}, "username": {"basic-user-3f9"}, "password": {"basic-pw-1c7e"}}
	resp, _ = lighthouse.do(t, "POST", "/sites/"+lighthouse.a.siteID+"/access", "application/x-www-form-urlencoded", noToken.Encode(), cookie(lighthouse.a.session))
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d, want 403", resp.StatusCode)
	}
	for _, f := range []*accessFixture{psi, noKeys, replayed, lighthouse} {
		if sa, _ := f.stored(t); sa.Kind != store.AccessNone {
			t.Errorf("a refused setting was stored: %v", sa.Kind)
		}
		noSecret(t, "the log", f.logs.String())
	}
}

// A setting is bound to the origin it was given for: once the site's domain changes (an editor
// pointing it at a host of theirs), it no longer opens, the edit page says so, and no field of it
// is kept: every one must be typed again.
func TestSiteAccessFollowsTheDomain(t *testing.T) {
	st := storetest.Backends(t)[0].Open(t)
	f := newAccessFixture(t, st, nil)
	f.post(t, url.Values{"kind": {"basic"}, "username": {"basic-user-3f9"}, "password": {"basic-pw-1c7e"}})
	site, err := st.Site(context.Background(), f.a.userID, f.a.siteID)
	must(t, err)
	site.Domain, site.UserID = "collector.example", f.a.userID
	must(t, st.UpdateSite(context.Background(), site))

	_, page := f.do(t, "GET", "/sites/"+f.a.siteID+"/edit", "", "", cookie(f.a.session))
	if !strings.Contains(page, "made for the site's former domain") || strings.Contains(page, `<span class="tag set">set</span></label>`) {
		t.Error("the edit page does not say the setting is stale, or still marks its fields set")
	}
	resp, body := f.post(t, url.Values{"kind": {"basic"}, "username": {"editor-user"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "Enter the password.") {
		t.Errorf("keeping the password across a domain change: %d, want 422 asking for it", resp.StatusCode)
	}
}
