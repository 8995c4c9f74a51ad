package handlers

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"sitepulse/oidc"
	"sitepulse/oidc/oidctest"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/platform"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// ssoServer is a test server whose single sign-on provider is the double p, reached through
// the outbound guard with p's loopback address exempted (as the scanner's tests exempt theirs).
func ssoServer(t *testing.T, st store.Store, p *oidctest.Provider, with func(*Deps)) *testServer {
	t.Helper()
	var ts *testServer
	ts = newTestServerWith(t, st, func(d *Deps) {
		exempt := netip.MustParseAddrPort(strings.TrimPrefix(p.URL, "http://"))
		d.SSOProvider = oidc.New(oidc.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
			RedirectURL: "http://sitepulse.test/login/sso/callback", HTTP: netguard.Guard{Exempt: exempt}.Client(), Now: d.Now, AllowHTTP: true})
		d.SSOName = "Acme ID"
		d.ChannelKeys = platform.RandomKeys()
		d.SSOResolver = fakeTXT{}
		if with != nil {
			with(d)
		}
	})
	p.Now = func() time.Time { return ts.now }
	return ts
}

// fakeTXT answers TXT records from a map: no DNS is asked in tests.
type fakeTXT map[string][]string

func (f fakeTXT) LookupTXT(_ context.Context, name string) ([]string, error) { return f[name], nil }

// signInWithSSO goes from the login page's button to the provider and back, as a browser does, and
// answers the callback's response. The provider signs in at once.
func signInWithSSO(t *testing.T, b *browser) (*http.Response, string) {
	t.Helper()
	resp, _ := b.get("/login/sso")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("/login/sso: %d, want 303 to the provider", resp.StatusCode)
	}
	at, err := b.c.Get(resp.Header.Get("Location")) // the jar holds the server's cookies only
	if err != nil {
		t.Fatal(err)
	}
	at.Body.Close()
	back, err := url.Parse(at.Header.Get("Location"))
	if err != nil || back.Path != "/login/sso/callback" {
		t.Fatalf("the provider sent the browser to %q", at.Header.Get("Location"))
	}
	return b.get("/login/sso/callback?" + back.RawQuery)
}

// TestSSOEveryWrongTokenShowsWhy walks the hostile provider's every wrong ID token through the
// callback: each is refused with the page that says why, and no session is made.
func TestSSOEveryWrongTokenShowsWhy(t *testing.T) {
	p := oidctest.New(t, "sitepulse", "s3cret")
	for _, tc := range oidctest.WrongTokens {
		t.Run(tc.Fault+" is refused with its reason", func(t *testing.T) {
			p.Set(func(p *oidctest.Provider) { p.Fault = tc.Fault })
			ts := ssoServer(t, memory.New(), p, nil)
			b := ts.browser(t)
			resp, body := signInWithSSO(t, b)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Single sign-on refused") || !strings.Contains(body, html.EscapeString(tc.Reason)) {
				t.Fatalf("got %d %.600s; want 401 saying %q", resp.StatusCode, body, tc.Reason)
			}
			if resp, _ := b.get("/settings"); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("a session was made: /settings answered %d", resp.StatusCode)
			}
			if _, err := ts.store.UserByEmail(context.Background(), "pat@example.com"); err == nil {
				t.Fatal("an account was made from a refused token")
			}
		})
	}
	p.Set(func(p *oidctest.Provider) { p.Fault = "" })

	t.Run("a replayed code, with the flow cookie copied, is refused by the provider and shown", func(t *testing.T) {
		ts := ssoServer(t, memory.New(), p, nil)
		b := ts.browser(t)
		resp, _ := b.get("/login/sso")
		at, _ := b.c.Get(resp.Header.Get("Location"))
		at.Body.Close()
		back, _ := url.Parse(at.Header.Get("Location"))
		u, _ := url.Parse(ts.URL)
		flow := b.c.Jar.Cookies(u)
		if resp, _ := b.get("/login/sso/callback?" + back.RawQuery); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("first callback: %d", resp.StatusCode)
		}
		jar, _ := cookiejar.New(nil)
		jar.SetCookies(u, flow)
		replay := &browser{t: t, base: ts.URL, c: &http.Client{Jar: jar, CheckRedirect: b.c.CheckRedirect}}
		resp, body := replay.get("/login/sso/callback?" + back.RawQuery)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "refused the code (invalid_grant)") {
			t.Fatalf("replay: %d %.400s", resp.StatusCode, body)
		}
	})
	t.Run("a callback without this browser's flow, or with another state, is refused", func(t *testing.T) {
		ts := ssoServer(t, memory.New(), p, nil)
		b := ts.browser(t)
		if resp, body := b.get("/login/sso/callback?code=x&state=y"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "started in another browser") {
			t.Fatalf("no flow: %d %.300s", resp.StatusCode, body)
		}
		b.get("/login/sso")
		if resp, body := b.get("/login/sso/callback?code=x&state=forged"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "state does not match") {
			t.Fatalf("forged state: %d %.300s", resp.StatusCode, body)
		}
	})
}

// TestSSOSignIn: the login page offers the provider; a first sign-in makes the account of the
// identity, a second finds it by (issuer, subject) even when the e-mail changed; an existing
// password account with the e-mail is not taken over.
func TestSSOSignIn(t *testing.T) {
	p := oidctest.New(t, "sitepulse", "s3cret")
	ts := ssoServer(t, memory.New(), p, nil)
	b := ts.browser(t)
	if _, body := b.get("/login?next=/reports"); !strings.Contains(body, `href="/login/sso?next=%2freports"`) || !strings.Contains(body, "Sign in with Acme ID") {
		t.Fatalf("the login page offers no provider: %.800s", body)
	}
	resp, _ := signInWithSSO(t, b)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("callback: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	u, err := ts.store.UserByEmail(context.Background(), "pat@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := b.get("/settings"); resp.StatusCode != http.StatusOK {
		t.Fatalf("signed in: /settings %d", resp.StatusCode)
	}
	// The sign-in is in the security log of the account's workspaces (ssoEvent), with no token.
	wss, err := ts.store.WorkspacesOf(context.Background(), u.ID)
	if err != nil || len(wss) == 0 {
		t.Fatalf("workspaces of the new account: %v %v", wss, err)
	}
	lines, err := ts.store.LogOf(context.Background(), store.LogFilter{WorkspaceID: wss[0].ID, Kind: store.LogSSOSignIn})
	if err != nil || len(lines) != 1 || lines[0].ActorID != u.ID || lines[0].Details["issuer"] == "" {
		t.Fatalf("the SSO sign-in in the audit log: %+v %v", lines, err)
	}
	p.Set(func(p *oidctest.Provider) { p.Email = "pat.new@example.com" })
	b2 := ts.browser(t)
	signInWithSSO(t, b2)
	if resp, body := b2.get("/settings"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "pat@example.com") {
		t.Fatalf("second sign-in: %d, want pat's account (%s)", resp.StatusCode, u.ID)
	}

	// The MCP authorization server sends a signed-out person to the login page with its
	// request in next: the button keeps it, and the sign-in comes back to it.
	// (A Client ID Metadata Document's client_id is fetched for a signed-in person only.)
	resp, _ = ts.browser(t).get("/oauth/authorize?client_id=" + url.QueryEscape("https://app.example/client.json"))
	loginURL := resp.Header.Get("Location")
	if _, body := ts.browser(t).get(loginURL); !strings.HasPrefix(loginURL, "/login?next=") {
		t.Fatalf("authorize, signed out: to %q", loginURL)
	} else if !strings.Contains(body, `href="/login/sso?next=%2foauth%2fauthorize%3fclient_id%3dhttps%253A%252F%252Fapp.example%252Fclient.json"`) {
		t.Fatalf("the MCP login page's button loses the request: %.1500s", body)
	}
	b3 := ts.browser(t)
	start, _ := b3.get("/login/sso?next=" + url.QueryEscape("/oauth/authorize?client_id=x&response_type=code"))
	at, _ := b3.c.Get(start.Header.Get("Location"))
	at.Body.Close()
	back, _ := url.Parse(at.Header.Get("Location"))
	if resp, _ := b3.get("/login/sso/callback?" + back.RawQuery); resp.Header.Get("Location") != "/oauth/authorize?client_id=x&response_type=code" {
		t.Fatalf("after the sign-in: to %q, want back to the authorization request", resp.Header.Get("Location"))
	}

	// Another person at the provider whose e-mail is a password account's: refused.
	hash, _ := store.HashPassword(testPassword, 1000)
	must(t, ts.store.CreateUser(context.Background(), store.User{ID: store.NewID(), Email: "sam@example.com", PasswordHash: hash, CreatedAt: ts.now}))
	p.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "sub-2", "sam@example.com" })
	resp, body := signInWithSSO(t, ts.browser(t))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "already exists here") {
		t.Fatalf("takeover of sam's account: %d %.400s", resp.StatusCode, body)
	}
}

// TestSSODomainVerificationAndRequirement runs a workspace's rule on both stores: the owner
// verifies the domain by its TXT record and requires SSO; a newcomer from the domain joins
// just in time; a member's password session and older API key are refused there, a newer key
// works; when the provider stops vouching, the member's sessions end at the next re-check and
// their key stops working.
func TestSSODomainVerificationAndRequirement(t *testing.T) {
	for _, backend := range storetest.Backends(t) {
		t.Run(backend.Name, func(t *testing.T) {
			st := backend.Open(t)
			p := oidctest.New(t, "sitepulse", "s3cret")
			txt := fakeTXT{}
			ts := ssoServer(t, st, p, func(d *Deps) { d.SSOResolver = txt; d.SSORecheck = time.Hour })
			ctx := context.Background()

			// The owner signs in with the provider and makes the team's workspace.
			p.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "owner", "olga@acme.test" })
			owner := ts.browser(t)
			signInWithSSO(t, owner)
			owner.refreshCSRF()
			olga, err := st.UserByEmail(ctx, "olga@acme.test")
			must(t, err)
			ws := store.Workspace{ID: store.NewID(), Name: "Acme", CreatedAt: ts.now}
			must(t, st.CreateWorkspace(ctx, ws, olga.ID, 10))
			path := "/workspaces/" + ws.ID + "/sso"
			form := func(v url.Values) url.Values { v.Set("csrf_token", owner.csrf); return v }

			if resp, body := owner.post(path+"/require", form(url.Values{"required": {"on"}})); resp.StatusCode != 422 || !strings.Contains(body, "Verify the domain") {
				t.Fatalf("required before verification: %d", resp.StatusCode)
			}
			if resp, _ := owner.post(path+"/domain", form(url.Values{"domain": {"ACME.test."}})); resp.StatusCode != 303 {
				t.Fatalf("domain: %d", resp.StatusCode)
			}
			rule, _ := st.SSORule(ctx, ws.ID)
			if rule.Domain != "acme.test" || len(rule.Token) != 32 {
				t.Fatalf("rule %+v", rule)
			}
			if resp, body := owner.post(path+"/verify", form(url.Values{})); resp.StatusCode != 422 || !strings.Contains(body, "sitepulse-verification="+rule.Token) {
				t.Fatalf("verify without the record: %d %.300s", resp.StatusCode, body)
			}
			txt["acme.test"] = []string{"v=spf1 -all", "sitepulse-verification=" + rule.Token}
			if resp, _ := owner.post(path+"/verify", form(url.Values{})); resp.StatusCode != 303 {
				t.Fatalf("verify: %d", resp.StatusCode)
			}

			// A member with a password, and a key made before the requirement.
			hash, _ := store.HashPassword(testPassword, 1000)
			pat := store.User{ID: store.NewID(), Email: "pat@acme.test", PasswordHash: hash, CreatedAt: ts.now}
			must(t, st.CreateUser(ctx, pat))
			if _, err := st.JoinJustInTime(ctx, ws.ID, pat.ID, store.RoleEditor, ts.now); err != nil {
				t.Fatal(err)
			}
			oldKey := apiKey(t, st, pat.ID, ws.ID, ts.now)
			pw := ts.browser(t)
			if resp, _ := pw.post("/login", url.Values{"email": {"pat@acme.test"}, "password": {testPassword}}); resp.StatusCode != 303 {
				t.Fatalf("password login: %d", resp.StatusCode)
			}
			if resp, _ := pw.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("before the requirement, the password session opens the workspace: %d", resp.StatusCode)
			}

			// An owner signed in with a password cannot require it: it could lock them out.
			oscar := store.User{ID: store.NewID(), Email: "oscar@elsewhere.test", PasswordHash: hash, CreatedAt: ts.now}
			must(t, st.CreateUser(ctx, oscar))
			st.JoinJustInTime(ctx, ws.ID, oscar.ID, store.RoleViewer, ts.now)
			must(t, st.SetRole(ctx, ws.ID, oscar.ID, store.RoleOwner))
			ob := ts.browser(t)
			ob.post("/login", url.Values{"email": {oscar.Email}, "password": {testPassword}})
			ob.refreshCSRF()
			if resp, body := ob.post(path+"/require", url.Values{"csrf_token": {ob.csrf}, "required": {"on"}}); resp.StatusCode != 422 || !strings.Contains(body, "could lock you out") {
				t.Fatalf("an owner's password session requires SSO: %d", resp.StatusCode)
			}

			ts.now = ts.now.Add(time.Minute)
			if resp, _ := owner.post(path+"/require", form(url.Values{"required": {"on"}, "jit_role": {"viewer"}})); resp.StatusCode != 303 {
				t.Fatalf("require: %d", resp.StatusCode)
			}
			// Required through the operator's provider, the workspace takes no provider of its
			// own (the requirement would move to it, through which nobody has signed in).
			if resp, body := owner.post(path+"/provider", form(url.Values{"issuer": {"https://id.acme.test"}, "client_id": {"x"}, "client_secret": {"y"}})); resp.StatusCode != 409 || !strings.Contains(body, "lift the requirement") {
				t.Fatalf("a provider of its own while required through the operator's: %d %.300s", resp.StatusCode, body)
			}
			if resp, body := pw.get("/workspaces/" + ws.ID); resp.StatusCode != 403 || !strings.Contains(body, "requires single sign-on for @acme.test") {
				t.Fatalf("password session after the requirement: %d %.300s", resp.StatusCode, body)
			}
			site := store.Site{ID: store.NewID(), UserID: olga.ID, WorkspaceID: ws.ID, Name: "Acme shop", Domain: "shop.acme.test", CreatedAt: ts.now}
			must(t, st.CreateSite(ctx, site))
			if _, body := pw.get("/"); strings.Contains(body, "Acme shop") {
				t.Fatal("the home page lists the workspace's site to pat's password session")
			}
			if resp, _ := pw.get("/api/sites/" + site.ID + "/export"); resp.StatusCode != 403 {
				t.Fatalf("pat's password session exports the workspace's site: %d, want 403", resp.StatusCode)
			}
			if _, body := owner.get("/"); !strings.Contains(body, "Acme shop") {
				t.Fatal("the home page hides the site from olga's SSO session")
			}
			if resp, _ := pw.get("/workspaces/" + store.PersonalWorkspace(pat.ID)); resp.StatusCode != 200 {
				t.Fatalf("the rule reached pat's personal workspace: %d", resp.StatusCode)
			}
			if status := bearerStatus(t, ts, oldKey); status != 403 {
				t.Fatalf("a key made before the requirement: %d, want 403", status)
			}
			// The budget check authenticates its key itself: each of its forms follows the rule.
			for _, body := range []string{`{"siteId":"%s"}`, `{"siteId":"%s","format":"junit"}`, `{"siteId":"%s","fieldBudgets":{"inp":200}}`} {
				if status := budgetCheckStatus(t, ts, oldKey, fmt.Sprintf(body, site.ID)); status != 403 {
					t.Fatalf("a key made before the requirement checks %s: %d, want 403", body, status)
				}
			}
			// Break glass: the operator suspends the workspace's requirement.
			glass := ssoServer(t, st, p, func(d *Deps) { d.SSOBreakGlass = map[string]bool{ws.ID: true} })
			glass.now = ts.now
			gb := glass.browser(t)
			gb.post("/login", url.Values{"email": {"pat@acme.test"}, "password": {testPassword}})
			if resp, _ := gb.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("with SSO_BREAK_GLASS, pat's password session: %d, want 200", resp.StatusCode)
			}
			p.Now = func() time.Time { return ts.now }

			// Pat's OAuth app (MCP): refused while the provider has not vouched for pat.
			if status := mcpStatus(t, ts, mcpToken(t, st, pat.ID, ts.now)); status != 403 {
				t.Fatalf("pat's MCP token before any SSO sign-in: %d, want 403", status)
			}

			// Pat signs in with the provider: linked (verified e-mail, verified domain).
			p.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "pat", "pat@acme.test" })
			sso := ts.browser(t)
			if resp, body := signInWithSSO(t, sso); resp.StatusCode != 303 {
				t.Fatalf("pat's sign-in: %d %.300s", resp.StatusCode, body)
			}
			if resp, _ := sso.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("pat's SSO session: %d", resp.StatusCode)
			}
			if status := mcpStatus(t, ts, mcpToken(t, st, pat.ID, ts.now)); status != 200 {
				t.Fatalf("pat's MCP token after the SSO sign-in: %d, want 200", status)
			}
			newKey := apiKey(t, st, pat.ID, ws.ID, ts.now)
			if status := bearerStatus(t, ts, newKey); status != 404 {
				t.Fatalf("a key made after the requirement: %d, want through the gate (404 unknown scan)", status)
			}

			// A newcomer from the domain joins as the rule's role.
			p.Set(func(p *oidctest.Provider) { p.Subject, p.Email = "nia", "nia@acme.test" })
			signInWithSSO(t, ts.browser(t))
			niaUser, err := st.UserByEmail(ctx, "nia@acme.test")
			must(t, err)
			if w, err := st.Workspace(ctx, niaUser.ID, ws.ID); err != nil || w.Role != store.RoleViewer {
				t.Fatalf("nia joined as %q (%v), want viewer", w.Role, err)
			}

			// A provider that cannot be asked ends nothing: the request is refused, the next
			// asks again.
			p.Set(func(p *oidctest.Provider) { p.Down = true })
			ts.now = ts.now.Add(61 * time.Minute)
			if resp, _ := sso.get("/workspaces/" + ws.ID); resp.StatusCode != 303 {
				t.Fatalf("provider down: %d, want this request signed out", resp.StatusCode)
			}
			p.Set(func(p *oidctest.Provider) { p.Down = false })
			if resp, _ := sso.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("provider back: %d, want the session kept and re-vouched", resp.StatusCode)
			}

			// The provider stops vouching for pat: within the re-check interval nothing is
			// asked; past it, the session ends and the key stops.
			p.Set(func(p *oidctest.Provider) { p.Refuse = true })
			ts.now = ts.now.Add(59 * time.Minute)
			if resp, _ := sso.get("/workspaces/" + ws.ID); resp.StatusCode != 200 {
				t.Fatalf("within the interval: %d", resp.StatusCode)
			}
			ts.now = ts.now.Add(2 * time.Minute)
			wantVouchLost(t, ts, sso, ws.ID, newKey, store.Identity{Issuer: p.Issuer, Subject: "pat", UserID: pat.ID})

			// The owner, signed in with a password only, cannot require SSO.
			p.Set(func(p *oidctest.Provider) { p.Refuse = false })
		})
	}
}

// wantVouchLost checks what a provider's refusal to vouch for id ends, at the next request
// past the re-check interval: b's single sign-on session (to the login page), the person's
// API key in workspace wsID and their OAuth token (403); the identity is marked lost.
func wantVouchLost(t *testing.T, ts *testServer, b *browser, wsID, key string, id store.Identity) {
	t.Helper()
	if resp, _ := b.get("/workspaces/" + wsID); resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("after the lost vouch: %d %q, want the login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if status := bearerStatus(t, ts, key); status != 403 {
		t.Fatalf("the key after the lost vouch: %d, want 403", status)
	}
	if status := mcpStatus(t, ts, mcpToken(t, ts.store, id.UserID, ts.now)); status != 403 {
		t.Fatalf("the MCP token after the lost vouch: %d, want 403", status)
	}
	if got, err := ts.store.Identity(context.Background(), id.Issuer, id.Subject); err != nil || got.LostAt == nil {
		t.Fatalf("the identity after the lost vouch: %+v %v", got, err)
	}
}

func apiKey(t *testing.T, st store.Store, userID, workspaceID string, at time.Time) string {
	t.Helper()
	key, hash := store.NewSecret("svc_")
	must(t, st.CreateAPIKey(context.Background(), store.APIKey{ID: store.NewID(), UserID: userID, WorkspaceID: workspaceID, Name: "ci",
		KeyHash: hash, Prefix: key[:8], Scope: store.ScopeRead, CreatedAt: at}))
	return key
}

// bearerStatus is the status of a read through the API-key door with key.
func bearerStatus(t *testing.T, ts *testServer, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/external/scans/"+store.NewID(), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// budgetCheckStatus is the status of a budget check with key and body.
func budgetCheckStatus(t *testing.T, ts *testServer, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/external/budget-check", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// mcpStatus is the status of an MCP ping with an OAuth access token.
func mcpStatus(t *testing.T, ts *testServer, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
