package handlers

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

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
