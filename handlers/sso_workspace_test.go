package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/oidc"
	"sitepulse/oidc/oidctest"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/platform"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// lockedLog is a log sink the handlers write to while the test reads it.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// wsProviderServer is a server with no operator provider: workspaces bring their own, reached
// through the outbound guard (private addresses allowed: the doubles listen on loopback).
func wsProviderServer(t *testing.T, st store.Store, logs *lockedLog) *testServer {
	return newTestServerWith(t, st, func(d *Deps) {
		d.ChannelKeys = platform.RandomKeys()
		d.SSOResolver = fakeTXT{}
		d.Guard = netguard.Guard{AllowPrivate: true}
		d.SSOAllowHTTP = true
		d.SSORecheck = time.Hour
		d.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
}

// ownerOf makes a password account owning a workspace whose domain is verified, signed in.
func ownerOf(t *testing.T, ts *testServer, email, domain string) (*browser, store.Workspace) {
	t.Helper()
	ctx := context.Background()
	hash, _ := store.HashPassword(testPassword, 1000)
	u := store.User{ID: store.NewID(), Email: email, PasswordHash: hash, CreatedAt: ts.now}
	must(t, ts.store.CreateUser(ctx, u))
	ws := store.Workspace{ID: store.NewID(), Name: "Team " + domain, CreatedAt: ts.now}
	must(t, ts.store.CreateWorkspace(ctx, ws, u.ID, 10))
	v := ts.now
	must(t, ts.store.SetWorkspaceSSO(ctx, u.ID, store.WorkspaceSSO{WorkspaceID: ws.ID, Domain: domain, Token: "t", VerifiedAt: &v, UpdatedAt: v}))
	b := ts.browser(t)
	if resp, _ := b.post("/login", url.Values{"email": {email}, "password": {testPassword}}); resp.StatusCode != 303 {
		t.Fatalf("login %s: %d", email, resp.StatusCode)
	}
	b.refreshCSRF()
	return b, ws
}

// ssoThrough follows a sign-in start (303 to a provider) to the provider and back to the
// callback, and answers the callback's response and the provider's address it went to.
func ssoThrough(t *testing.T, b *browser, start string) (*http.Response, string, string) {
	t.Helper()
	resp, body := b.get(start)
	if resp.StatusCode != http.StatusSeeOther {
		return resp, body, ""
	}
	to := resp.Header.Get("Location")
	at, err := b.c.Get(to)
	if err != nil {
		t.Fatal(err)
	}
	at.Body.Close()
	back, err := url.Parse(at.Header.Get("Location"))
	if err != nil || back.Path != "/login/sso/callback" {
		t.Fatalf("the provider sent the browser to %q", at.Header.Get("Location"))
	}
	resp, body = b.get("/login/sso/callback?" + back.RawQuery)
	return resp, body, to
}

// TestSSOWorkspaceProvider runs workspaces' own providers on both stores, the hostile double
// acting as each: an owner sets theirs (discovery through the guard, the issuer must match,
// the secret sealed and never shown or logged); another workspace's owner can neither read
// nor change it; the login page's work e-mail routes to the provider of the address's
// verified domain; a provider vouching for an address outside its workspace's domain is
// refused, so two workspaces' providers do not cross; the re-check finds the provider from
// the session's issuer.
func TestSSOWorkspaceProvider(t *testing.T) {
	for _, backend := range storetest.Backends(t) {
		t.Run(backend.Name, func(t *testing.T) {
			st := backend.Open(t)
			logs := &lockedLog{}
			ts := wsProviderServer(t, st, logs)
			ctx := context.Background()
			const secretA, secretB = "workspace-A-secret-0f3a9c", "workspace-B-secret-77d21e"
			pa, pb := oidctest.New(t, "sp-a", secretA), oidctest.New(t, "sp-b", secretB)
			pa.Now = func() time.Time { return ts.now }
			pb.Now = pa.Now
			olga, wa := ownerOf(t, ts, "olga@acme.test", "acme.test")
			bob, wb := ownerOf(t, ts, "bob@beta.test", "beta.test")
			set := func(b *browser, ws store.Workspace, issuer, clientID, secret string) (*http.Response, string) {
				return b.post("/workspaces/"+ws.ID+"/sso/provider", url.Values{"csrf_token": {b.csrf}, "issuer": {issuer}, "client_id": {clientID}, "client_secret": {secret}})
			}

			// No provider anywhere: the login page asks for no work e-mail.
			if _, body := ts.browser(t).get("/login"); strings.Contains(body, "Work e-mail") {
				t.Fatal("the login page asks for a work e-mail before any workspace has a provider")
			}
			// The issuer must be the discovery document's exactly.
			if resp, body := set(olga, wa, pa.Issuer+"/other", "sp-a", secretA); resp.StatusCode != 422 || !strings.Contains(body, "not saved") {
				t.Fatalf("a wrong issuer: %d %.300s", resp.StatusCode, body)
			}
			if resp, body := set(olga, wa, pa.Issuer, "sp-a", secretA); resp.StatusCode != 303 {
				t.Fatalf("olga sets A's provider: %d %.300s", resp.StatusCode, body)
			}
			p, err := st.WorkspaceProviderOf(ctx, wa.ID)
			if err != nil || p.Issuer != pa.Issuer || p.ClientID != "sp-a" || p.SecretSealed == "" || strings.Contains(p.SecretSealed, secretA) {
				t.Fatalf("A's provider as stored: %+v %v", p, err)
			}
			// Another workspace's owner: A's page and A's provider are not found.
			if resp, _ := bob.get("/workspaces/" + wa.ID + "/sso"); resp.StatusCode != 404 {
				t.Fatalf("bob reads A's single sign-on page: %d", resp.StatusCode)
			}
			if resp, _ := set(bob, wa, pb.Issuer, "sp-b", secretB); resp.StatusCode != 404 {
				t.Fatalf("bob changes A's provider: %d", resp.StatusCode)
			}
			if p2, _ := st.WorkspaceProviderOf(ctx, wa.ID); p2 != p {
				t.Fatalf("A's provider after bob's request: %+v", p2)
			}
			// One issuer is one workspace's provider.
			if resp, _ := set(bob, wb, pa.Issuer, "sp-a", secretA); resp.StatusCode != 409 {
				t.Fatalf("bob takes A's issuer: %d", resp.StatusCode)
			}
			if resp, body := set(bob, wb, pb.Issuer, "sp-b", secretB); resp.StatusCode != 303 {
				t.Fatalf("bob sets B's provider: %d %.300s", resp.StatusCode, body)
			}
			// A blank secret keeps the one set.
			if resp, body := set(olga, wa, pa.Issuer, "sp-a", ""); resp.StatusCode != 303 {
				t.Fatalf("olga saves again without the secret: %d %.300s", resp.StatusCode, body)
			}
			resp, page := olga.get("/workspaces/" + wa.ID + "/sso")
			if resp.StatusCode != 200 || !strings.Contains(page, pa.Issuer) || !strings.Contains(page, "secret set") || !strings.Contains(page, "/login/sso/w/"+wa.ID) {
				t.Fatalf("A's page: %d %.2000s", resp.StatusCode, page)
			}

			// The login page asks for a work e-mail; pat's routes to A's provider.
			if _, body := ts.browser(t).get("/login"); !strings.Contains(body, "Work e-mail") {
				t.Fatal("the login page asks for no work e-mail")
			} else if strings.Count(body, "autofocus") != 1 || !strings.Contains(body, `maxlength="254" autofocus>`) {
				t.Fatalf("the cursor should start in the work e-mail field, the page's first: %.1500s", body)
			}
			pa.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "pat", "pat@acme.test" })
			pat := ts.browser(t)
			resp, body, to := ssoThrough(t, pat, "/login/sso?email="+url.QueryEscape("Pat@ACME.test"))
			if !strings.HasPrefix(to, pa.URL) || resp.StatusCode != 303 {
				t.Fatalf("pat's sign-in: to %q, %d %.300s", to, resp.StatusCode, body)
			}
			patU, err := st.UserByEmail(ctx, "pat@acme.test")
			must(t, err)
			if id, err := st.Identity(ctx, pa.Issuer, "pat"); err != nil || id.UserID != patU.ID {
				t.Fatalf("pat's identity is not (A's issuer, pat): %+v %v", id, err)
			}
			// The per-workspace page goes to A's provider too.
			if resp, _ := ts.browser(t).get("/login/sso/w/" + wa.ID); resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), pa.URL) {
				t.Fatalf("/login/sso/w/A: %d %q", resp.StatusCode, resp.Header.Get("Location"))
			}

			// A's provider asserts an address of B's domain (bob's), or of none verified:
			// refused with the page that says why, and no account is opened or made.
			for _, email := range []string{"bob@beta.test", "eve@elsewhere.test"} {
				pa.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "hostile-"+email, email })
				resp, body, _ := ssoThrough(t, ts.browser(t), "/login/sso/w/"+wa.ID)
				if resp.StatusCode != 403 || !strings.Contains(body, "vouches only for verified @acme.test addresses") {
					t.Fatalf("A's provider vouches for %s: %d %.400s", email, resp.StatusCode, body)
				}
				if _, err := st.Identity(ctx, pa.Issuer, "hostile-"+email); err == nil {
					t.Fatalf("an identity was bound for %s", email)
				}
			}
			if _, err := st.UserByEmail(ctx, "eve@elsewhere.test"); err == nil {
				t.Fatal("an account was made for eve")
			}
			// An address the provider does not say is verified: refused too.
			pa.Set(func(p *oidctest.Provider) { p.Subject, p.Email, p.Verified = "unverified", "una@acme.test", false })
			if resp, _, _ := ssoThrough(t, ts.browser(t), "/login/sso/w/"+wa.ID); resp.StatusCode != 403 {
				t.Fatalf("an unverified address: %d", resp.StatusCode)
			}
			pa.Set(func(p *oidctest.Provider) { p.Verified = true })

			// The work e-mail of B's domain goes to B's provider, never A's; B's provider
			// cannot vouch for pat.
			pb.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "pat-at-b", "pat@acme.test" })
			resp, body, to = ssoThrough(t, ts.browser(t), "/login/sso?email=sam@beta.test")
			if !strings.HasPrefix(to, pb.URL) || resp.StatusCode != 403 || !strings.Contains(body, "@beta.test") {
				t.Fatalf("B's provider vouches for pat: to %q, %d %.300s", to, resp.StatusCode, body)
			}
			// An unknown domain, and no operator's provider: a plain message.
			if resp, body := ts.browser(t).get("/login/sso?email=x@unknown.test"); resp.StatusCode != 404 || !strings.Contains(body, "not set up for that address") {
				t.Fatalf("an unknown domain: %d %.300s", resp.StatusCode, body)
			}

			// The re-check asks A's provider, found from the session's issuer: past the
			// interval a refusal ends pat's session.
			if resp, _ := pat.get("/settings"); resp.StatusCode != 200 {
				t.Fatalf("pat signed in: %d", resp.StatusCode)
			}
			ts.now = ts.now.Add(61 * time.Minute)
			if resp, _ := pat.get("/settings"); resp.StatusCode != 200 {
				t.Fatalf("pat re-vouched by A's provider: %d", resp.StatusCode)
			}
			pa.Set(func(p *oidctest.Provider) { p.Refuse = true })
			ts.now = ts.now.Add(61 * time.Minute)
			if resp, _ := pat.get("/settings"); resp.StatusCode != 303 {
				t.Fatalf("pat after A's provider refused: %d, want signed out", resp.StatusCode)
			}
			if id, err := st.Identity(ctx, pa.Issuer, "pat"); err != nil || id.LostAt == nil {
				t.Fatalf("pat's identity after the refusal: %+v %v", id, err)
			}

			// The secrets never appear in a page or the log.
			for _, path := range []string{"/workspaces/" + wa.ID + "/sso", "/workspaces/" + wb.ID + "/sso"} {
				for _, b := range []*browser{olga, bob} {
					if _, body := b.get(path); strings.Contains(body, secretA) || strings.Contains(body, secretB) {
						t.Fatalf("a secret on %s", path)
					}
				}
			}
			if l := logs.String(); strings.Contains(l, secretA) || strings.Contains(l, secretB) || !strings.Contains(l, "provider set") {
				t.Fatalf("the log holds a secret, or not the change: %.3000s", l)
			}
		})
	}
}

// TestSSORequiredThroughWorkspaceProvider runs, on both stores, a workspace that requires
// single sign-on through its own provider on a server with no provider of its own: the owner
// must have signed in through it first; then members of the domain reach the workspace only
// through it (password sessions and older keys refused, OAuth tokens while it vouches), a
// newcomer joins just in time, and its refusal ends the member's session at the next re-check.
// The provider cannot be removed, nor its issuer changed, while it is required; break glass
// suspends the requirement; lifted, the provider is removed, and the removal is in the log.
func TestSSORequiredThroughWorkspaceProvider(t *testing.T) {
	for _, backend := range storetest.Backends(t) {
		t.Run(backend.Name, func(t *testing.T) {
			st := backend.Open(t)
			logs := &lockedLog{}
			ts := wsProviderServer(t, st, logs)
			ctx := context.Background()
			pa, other := oidctest.New(t, "sp-a", "secret-a"), oidctest.New(t, "sp-o", "secret-o")
			pa.Now = func() time.Time { return ts.now }
			olgaPW, ws := ownerOf(t, ts, "olga@acme.test", "acme.test")
			olga, err := st.UserByEmail(ctx, "olga@acme.test")
			must(t, err)
			path := "/workspaces/" + ws.ID + "/sso"
			form := func(b *browser, v url.Values) url.Values { v.Set("csrf_token", b.csrf); return v }
			if resp, body := olgaPW.post(path+"/provider", form(olgaPW, url.Values{"issuer": {pa.Issuer}, "client_id": {"sp-a"}, "client_secret": {"secret-a"}})); resp.StatusCode != 303 {
				t.Fatalf("olga sets the provider: %d %.300s", resp.StatusCode, body)
			}

			// A member with a password, a key made before the requirement, an OAuth token.
			hash, _ := store.HashPassword(testPassword, 1000)
			pat := store.User{ID: store.NewID(), Email: "pat@acme.test", PasswordHash: hash, CreatedAt: ts.now}
			must(t, st.CreateUser(ctx, pat))
			if _, err := st.JoinJustInTime(ctx, ws.ID, pat.ID, store.RoleEditor, ts.now); err != nil {
				t.Fatal(err)
			}
			oldKey := apiKey(t, st, pat.ID, ws.ID, ts.now)
			patPW := ts.browser(t)
			if resp, _ := patPW.post("/login", url.Values{"email": {pat.Email}, "password": {testPassword}}); resp.StatusCode != 303 {
				t.Fatalf("pat's password login: %d", resp.StatusCode)
			}
			patPW.refreshCSRF()

			// From a password session the owner cannot require it: it could lock her out.
			if resp, body := olgaPW.post(path+"/require", form(olgaPW, url.Values{"required": {"on"}})); resp.StatusCode != 422 || !strings.Contains(body, "could lock you out") {
				t.Fatalf("required from a password session: %d %.300s", resp.StatusCode, body)
			}
			if r, _ := st.SSORule(ctx, ws.ID); r.RequiredAt != nil {
				t.Fatal("the requirement was stored")
			}
			// Through the workspace's provider she can.
			pa.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "olga", "olga@acme.test" })
			olgaSSO := ts.browser(t)
			if resp, body, _ := ssoThrough(t, olgaSSO, "/login/sso/w/"+ws.ID); resp.StatusCode != 303 {
				t.Fatalf("olga's sign-in through the workspace's provider: %d %.300s", resp.StatusCode, body)
			}
			olgaSSO.refreshCSRF()
			if _, page := olgaSSO.get(path); strings.Contains(page, "needs the server's provider") || strings.Contains(page, "sign in with") && strings.Contains(page, "first: that proves") {
				t.Fatalf("the settings page still says the workspace's provider cannot be required: %.3000s", page)
			}
			ts.now = ts.now.Add(time.Minute)
			if resp, body := olgaSSO.post(path+"/require", form(olgaSSO, url.Values{"required": {"on"}, "jit_role": {"viewer"}})); resp.StatusCode != 303 {
				t.Fatalf("olga requires SSO through the workspace's provider: %d %.300s", resp.StatusCode, body)
			}

			// Enforcement: pat's password session, older key and unvouched token are refused.
			if resp, body := patPW.get("/workspaces/" + ws.ID); resp.StatusCode != 403 || !strings.Contains(body, "requires single sign-on for @acme.test") {
				t.Fatalf("pat's password session after the requirement: %d %.300s", resp.StatusCode, body)
			}
			if resp, _ := olgaPW.get("/workspaces/" + ws.ID); resp.StatusCode != 403 {
				t.Fatalf("olga's own password session after the requirement: %d", resp.StatusCode)
			}
			if status := bearerStatus(t, ts, oldKey); status != 403 {
				t.Fatalf("a key made before the requirement: %d, want 403", status)
			}
			site := store.Site{ID: store.NewID(), UserID: olga.ID, WorkspaceID: ws.ID, Name: "Acme shop", Domain: "shop.acme.test", CreatedAt: ts.now}
			must(t, st.CreateSite(ctx, site))
			for _, body := range []string{`{"siteId":"%s"}`, `{"siteId":"%s","format":"junit"}`, `{"siteId":"%s","fieldBudgets":{"inp":200}}`} {
				if status := budgetCheckStatus(t, ts, oldKey, fmt.Sprintf(body, site.ID)); status != 403 {
					t.Fatalf("a key made before the requirement checks %s: %d, want 403", body, status)
				}
			}
			if resp, _ := patPW.get("/api/sites/" + site.ID + "/export"); resp.StatusCode != 403 {
				t.Fatalf("pat's password session exports the workspace's site: %d, want 403", resp.StatusCode)
			}
			if status := mcpStatus(t, ts, mcpToken(t, st, pat.ID, ts.now)); status != 403 {
				t.Fatalf("pat's MCP token before any SSO sign-in: %d, want 403", status)
			}
			// A session through another provider (not the workspace's) does not meet it.
			other.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "pat-elsewhere", "pat@acme.test" })
			must(t, st.LinkIdentity(ctx, store.Identity{Issuer: other.Issuer, Subject: "pat-elsewhere", UserID: pat.ID, Email: pat.Email, CreatedAt: ts.now, CheckedAt: ts.now}))
			elsewhere := ts.browser(t)
			tok, h := store.NewSecret("")
			must(t, st.CreateSession(ctx, store.Session{TokenHash: h, UserID: pat.ID, CSRF: "x", CreatedAt: ts.now, ExpiresAt: ts.now.Add(time.Hour), SSOIssuer: other.Issuer, SSOSubject: "pat-elsewhere", SSOCheckedAt: ts.now}))
			u, _ := url.Parse(ts.URL)
			elsewhere.c.Jar.SetCookies(u, []*http.Cookie{{Name: "session", Value: tok}})
			if resp, _ := elsewhere.get("/workspaces/" + ws.ID); resp.StatusCode != 403 {
				t.Fatalf("a session through another provider: %d, want 403", resp.StatusCode)
			}

			// Sign-up with an address of the domain goes to the provider, not to a password:
			// no message, no account; another domain's signs up as before.
			if resp, _ := ts.browser(t).post("/signup", url.Values{"email": {"Sam@acme.test"}}); resp.StatusCode != 303 || resp.Header.Get("Location") != "/login/sso?email=sam%40acme.test&next=%2F" {
				t.Fatalf("sign-up of a bound address: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			if _, err := st.UserByEmail(ctx, "sam@acme.test"); err == nil {
				t.Fatal("an account was made for sam")
			}
			if resp, _ := ts.browser(t).post("/signup", url.Values{"email": {"sam@elsewhere.test"}}); resp.StatusCode != 303 || resp.Header.Get("Location") != "/signup?sent=1" {
				t.Fatalf("sign-up of another domain's address: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
			}

			// Pat signs in through the workspace's provider: the workspace, a new key, MCP.
			pa.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "pat", "pat@acme.test" })
			patSSO := ts.browser(t)
			if resp, body, _ := ssoThrough(t, patSSO, "/login/sso?email=pat@acme.test"); resp.StatusCode != 303 {
				t.Fatalf("pat's sign-in: %d %.300s", resp.StatusCode, body)
			}
			if resp, _ := patSSO.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("pat's SSO session: %d", resp.StatusCode)
			}
			newKey := apiKey(t, st, pat.ID, ws.ID, ts.now)
			if status := bearerStatus(t, ts, newKey); status != 404 {
				t.Fatalf("a key made after the requirement: %d, want through the gate (404 unknown scan)", status)
			}
			if status := mcpStatus(t, ts, mcpToken(t, st, pat.ID, ts.now)); status != 200 {
				t.Fatalf("pat's MCP token after the SSO sign-in: %d, want 200", status)
			}

			// A newcomer from the domain joins as the rule's role.
			pa.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "nia", "nia@acme.test" })
			ssoThrough(t, ts.browser(t), "/login/sso/w/"+ws.ID)
			nia, err := st.UserByEmail(ctx, "nia@acme.test")
			must(t, err)
			if w, err := st.Workspace(ctx, nia.ID, ws.ID); err != nil || w.Role != store.RoleViewer {
				t.Fatalf("nia joined as %q (%v), want viewer", w.Role, err)
			}

			// The provider cannot be removed, nor its issuer changed, while it is required;
			// an editor cannot remove it at all.
			patSSO.refreshCSRF()
			if resp, _ := patSSO.post(path+"/provider/delete", form(patSSO, url.Values{})); resp.StatusCode != 403 {
				t.Fatalf("an editor removes the provider: %d, want 403", resp.StatusCode)
			}
			if resp, body := olgaSSO.post(path+"/provider/delete", form(olgaSSO, url.Values{})); resp.StatusCode != 409 || !strings.Contains(body, "lift the requirement") {
				t.Fatalf("removing the required provider: %d %.300s", resp.StatusCode, body)
			}
			if resp, body := olgaSSO.post(path+"/provider", form(olgaSSO, url.Values{"issuer": {other.Issuer}, "client_id": {"sp-o"}, "client_secret": {"secret-o"}})); resp.StatusCode != 409 || !strings.Contains(body, "lift the requirement") {
				t.Fatalf("changing the required provider's issuer: %d %.300s", resp.StatusCode, body)
			}
			// Another workspace's owner: not found.
			bob, _ := ownerOf(t, ts, "bob@beta.test", "beta.test")
			if resp, _ := bob.post(path+"/provider/delete", form(bob, url.Values{})); resp.StatusCode != 404 {
				t.Fatalf("another workspace's owner removes the provider: %d, want 404", resp.StatusCode)
			}
			if p, err := st.WorkspaceProviderOf(ctx, ws.ID); err != nil || p.Issuer != pa.Issuer {
				t.Fatalf("the provider after the refusals: %+v %v", p, err)
			}
			// Without the provider's secret (a server with other sealing keys), the requirement
			// still binds: it is not the operator's break glass.
			blind := newTestServerWith(t, st, func(d *Deps) { d.ChannelKeys = platform.RandomKeys() })
			blind.now = ts.now
			bb := blind.browser(t)
			bb.post("/login", url.Values{"email": {pat.Email}, "password": {testPassword}})
			if resp, _ := bb.get("/workspaces/" + ws.ID); resp.StatusCode != 403 {
				t.Fatalf("pat's password session where the provider's secret does not open: %d, want 403", resp.StatusCode)
			}
			// Break glass suspends it.
			glass := newTestServerWith(t, st, func(d *Deps) { d.SSOBreakGlass = map[string]bool{ws.ID: true} })
			glass.now = ts.now
			gb := glass.browser(t)
			gb.post("/login", url.Values{"email": {pat.Email}, "password": {testPassword}})
			if resp, _ := gb.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("with SSO_BREAK_GLASS, pat's password session: %d, want 200", resp.StatusCode)
			}

			// The workspace's provider stops vouching for pat: past the re-check interval his
			// session ends and his key and token stop.
			pa.Set(func(p *oidctest.Provider) { p.Refuse = true })
			ts.now = ts.now.Add(61 * time.Minute)
			wantVouchLost(t, ts, patSSO, ws.ID, newKey, store.Identity{Issuer: pa.Issuer, Subject: "pat", UserID: pat.ID})

			// Olga lifts the requirement (her session re-vouched), then removes the provider.
			pa.Set(func(p *oidctest.Provider) { p.Refuse = false })
			olgaSSO = ts.browser(t)
			pa.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "olga", "olga@acme.test" })
			ssoThrough(t, olgaSSO, "/login/sso/w/"+ws.ID)
			olgaSSO.refreshCSRF()
			if resp, body := olgaSSO.post(path+"/require", form(olgaSSO, url.Values{"jit_role": {""}})); resp.StatusCode != 303 {
				t.Fatalf("lifting the requirement: %d %.300s", resp.StatusCode, body)
			}
			if resp, body := olgaSSO.post(path+"/provider/delete", url.Values{}); resp.StatusCode != 403 {
				t.Fatalf("removing without the CSRF token: %d %.300s", resp.StatusCode, body)
			}
			if resp, body := olgaSSO.post(path+"/provider/delete", form(olgaSSO, url.Values{})); resp.StatusCode != 303 {
				t.Fatalf("removing the provider: %d %.300s", resp.StatusCode, body)
			}
			if _, err := st.WorkspaceProviderOf(ctx, ws.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the provider after its removal: %v", err)
			}
			if resp, _ := ts.browser(t).get("/login/sso/w/" + ws.ID); resp.StatusCode != 404 {
				t.Fatalf("signing in through the removed provider: %d", resp.StatusCode)
			}
			lines, err := st.LogOf(ctx, store.LogFilter{WorkspaceID: ws.ID, Kind: store.LogSSOSettingsChanged})
			must(t, err)
			var removed bool
			for _, l := range lines {
				removed = removed || l.Details["change"] == "provider removed" && l.ActorID == olga.ID && l.Details["issuer"] == pa.Issuer
			}
			if !removed {
				t.Fatalf("the removal is not in the security log: %+v", lines)
			}
			if resp, _ := patPW.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("pat's password session once the requirement is lifted: %d", resp.StatusCode)
			}
		})
	}
}

// TestSSOOwnProviderOverOperators: on a server with a provider of its own, a workspace that
// has its own requires single sign-on through its own only: the owner's session through the
// operator's provider does not let her require it, a member's does not open the workspace,
// and the operator's provider admits no newcomer to it.
func TestSSOOwnProviderOverOperators(t *testing.T) {
	for _, backend := range storetest.Backends(t) {
		t.Run(backend.Name, func(t *testing.T) {
			st := backend.Open(t)
			op, pa := oidctest.New(t, "sp-op", "secret-op"), oidctest.New(t, "sp-a", "secret-a")
			ts := newTestServerWith(t, st, func(d *Deps) {
				d.ChannelKeys = platform.RandomKeys()
				d.SSOResolver = fakeTXT{}
				d.Guard = netguard.Guard{AllowPrivate: true}
				d.SSOAllowHTTP = true
				d.SSORecheck = time.Hour
				d.SSOProvider = oidc.New(oidc.Config{Issuer: op.Issuer, ClientID: op.ClientID, ClientSecret: op.ClientSecret,
					RedirectURL: "http://sitepulse.test/login/sso/callback", HTTP: d.Guard.Client(), Now: d.Now, AllowHTTP: true})
				d.SSOName = "Operator ID"
			})
			op.Now = func() time.Time { return ts.now }
			pa.Now = op.Now
			ctx := context.Background()
			olgaPW, ws := ownerOf(t, ts, "olga@acme.test", "acme.test")
			path := "/workspaces/" + ws.ID + "/sso"
			if resp, body := olgaPW.post(path+"/provider", url.Values{"csrf_token": {olgaPW.csrf}, "issuer": {pa.Issuer}, "client_id": {"sp-a"}, "client_secret": {"secret-a"}}); resp.StatusCode != 303 {
				t.Fatalf("olga sets the workspace's provider: %d %.300s", resp.StatusCode, body)
			}
			signIn := func(p *oidctest.Provider, sub, email, start string) *browser {
				p.Set(func(p *oidctest.Provider) { p.Subject, p.Email = sub, email })
				b := ts.browser(t)
				if resp, body, _ := ssoThrough(t, b, start); resp.StatusCode != 303 {
					t.Fatalf("%s signs in through %s: %d %.300s", email, p.Issuer, resp.StatusCode, body)
				}
				b.refreshCSRF()
				return b
			}
			require := func(b *browser) (*http.Response, string) {
				return b.post(path+"/require", url.Values{"csrf_token": {b.csrf}, "required": {"on"}, "jit_role": {"viewer"}})
			}
			if resp, body := require(signIn(op, "olga-op", "olga@acme.test", "/login/sso")); resp.StatusCode != 422 || !strings.Contains(body, "the workspace&#39;s identity provider first") {
				t.Fatalf("required from a session through the operator's provider: %d %.300s", resp.StatusCode, body)
			}
			if resp, body := require(signIn(pa, "olga", "olga@acme.test", "/login/sso/w/"+ws.ID)); resp.StatusCode != 303 {
				t.Fatalf("required from a session through the workspace's provider: %d %.300s", resp.StatusCode, body)
			}
			// A newcomer through the operator's provider is not admitted, nor opens the
			// workspace; through the workspace's own, both.
			nia := signIn(op, "nia-op", "nia@acme.test", "/login/sso")
			u, err := st.UserByEmail(ctx, "nia@acme.test")
			must(t, err)
			if _, err := st.Workspace(ctx, u.ID, ws.ID); err == nil {
				t.Fatal("the operator's provider admitted nia just in time")
			}
			if resp, _ := nia.get("/workspaces/" + ws.ID); resp.StatusCode != 404 {
				t.Fatalf("nia through the operator's provider: %d, want 404 (not a member)", resp.StatusCode)
			}
			nia = signIn(pa, "nia", "nia@acme.test", "/login/sso?email=nia@acme.test")
			if w, err := st.Workspace(ctx, u.ID, ws.ID); err != nil || w.Role != store.RoleViewer {
				t.Fatalf("nia through the workspace's provider joined as %q (%v), want viewer", w.Role, err)
			}
			if resp, _ := nia.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("nia through the workspace's provider: %d", resp.StatusCode)
			}
			// Now a member, her session through the operator's provider is refused it.
			nop := signIn(op, "nia-op", "nia@acme.test", "/login/sso")
			if resp, body := nop.get("/workspaces/" + ws.ID); resp.StatusCode != 403 || !strings.Contains(body, "the workspace&#39;s identity provider") {
				t.Fatalf("a member's session through the operator's provider: %d %.300s", resp.StatusCode, body)
			}
		})
	}
}
