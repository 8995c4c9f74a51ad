package handlers

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner"
	"sitepulse/scanner/platform"
	"sitepulse/scanner/platform/platformtest"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

const (
	northwind = "6258612d1ee792848f805dcf" // platformtest.Sample's sites
	acme      = "6258612d1ee792848f805dd0"
	appID     = "client-13"
	appSecret = "secret-13"
)

// platformRig is SitePulse on a real listener (the double delivers webhooks to it) wired to the
// platform double, with the client's waits recorded instead of slept.
type platformRig struct {
	ts     *testServer
	st     store.Store
	double *platformtest.Platform
	conn   *platform.Connector
	logs   *scantest.LogBuffer

	mu    sync.Mutex
	waits []time.Duration
}

func newPlatformRig(t *testing.T, st store.Store) *platformRig {
	t.Helper()
	r := &platformRig{st: st, double: platformtest.New(t, appID, appSecret), logs: &scantest.LogBuffer{}}
	r.double.Sample()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	r.conn = &platform.Connector{Store: st, Keys: platform.RandomKeys(), WebhookURL: base + "/api/webhooks/platform", MaxSites: 50, Log: log, Now: time.Now,
		Client: platform.NewClient(platform.ClientConfig{APIURL: r.double.URL, ClientID: appID, ClientSecret: appSecret,
			Sleep: func(ctx context.Context, d time.Duration) error {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.waits = append(r.waits, d)
				return nil
			}})}
	r.ts = &testServer{store: st, now: time.Now()}
	h, err := NewHandler(withServers(st, Deps{BaseURL: base, PasswordIterations: 1000, Log: log, Now: time.Now,
		PlatformSecret: appSecret, Platform: r.conn, PlatformClientID: appID, PlatformAuthorizeURL: r.double.AuthorizeURL(),
		WebhookJitter: func() time.Duration { return 0 }}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	r.ts.Server = srv
	return r
}

func (r *platformRig) takeWaits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.waits
	r.waits = nil
	return w
}

// connect walks "Connect platform" -> the platform's consent -> the callback, as a person does.
func (r *platformRig) connect(t *testing.T, b *browser) {
	t.Helper()
	resp, _ := b.get("/platform/connect")
	wantStatus(t, resp, http.StatusFound)
	back, err := r.double.Approve(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(back)
	resp, body := b.get(u.RequestURI())
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/platform/import" {
		t.Fatalf("callback: %d %s\n%.500s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
}

func (r *platformRig) user(t *testing.T, email string) *browser {
	t.Helper()
	b := r.ts.browser(t)
	b.signup(email)
	u, err := r.st.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	b.userID = u.ID
	return b
}

func (r *platformRig) sites(t *testing.T, userID string) map[string]store.Site {
	t.Helper()
	sites, err := r.st.SitesOf(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Site{}
	for _, s := range sites {
		out[s.PlatformSiteID] = s
	}
	return out
}

// waitScan waits for a scan to finish (a deadline, not a speed assertion) and returns it.
func (r *platformRig) waitScan(t *testing.T, userID, scanID string) store.Scan {
	t.Helper()
	var sc store.Scan
	if !storetest.Eventually(func() bool {
		var err error
		if sc, err = r.st.Scan(context.Background(), userID, scanID); err != nil {
			t.Fatal(err)
		}
		return sc.Status == store.StatusComplete || sc.Status == store.StatusFailed
	}) {
		t.Fatalf("scan %s still %s; logs:\n%s", scanID, sc.Status, r.logs.String())
	}
	return sc
}

func paths(t *testing.T, st store.Store, userID, scanID string) string {
	t.Helper()
	results, err := st.PageResults(context.Background(), userID, scanID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, res := range results {
		if !slices.Contains(out, res.PagePath) {
			out = append(out, res.PagePath)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestPlatformConnectImportPublishDisconnect is the connect path, on every store, against the
// platform double: connect, approve, callback (a forged and a replayed state refused), import
// through a 429 and a 503, import again (nothing doubled), a second account refused the
// connected sites, first scans, a publish that audits a page published since the import, a
// publish with the platform down (saved list), a revoked token (reconnect), and disconnect.
func TestPlatformConnectImportPublishDisconnect(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			r := newPlatformRig(t, b.Open(t))
			a := r.user(t, "ada@example.com")

			_, body := a.get("/")
			contains(t, body, `href="/platform/connect"`)
			contains(t, body, "Connect platform")

			// The authorize redirect carries what the platform needs and a state.
			resp, _ := a.get("/platform/connect")
			wantStatus(t, resp, http.StatusFound)
			loc, _ := url.Parse(resp.Header.Get("Location"))
			q := loc.Query()
			if !strings.HasPrefix(loc.String(), r.double.AuthorizeURL()+"?") || q.Get("response_type") != "code" || q.Get("client_id") != appID ||
				q.Get("redirect_uri") != r.ts.URL+"/platform/callback" || q.Get("scope") != platform.Scopes || len(q.Get("state")) < 32 {
				t.Fatalf("authorize redirect %s", loc)
			}

			t.Run("a forged state imports nothing", func(t *testing.T) {
				resp, body := a.get("/platform/callback?code=x&state=forged")
				wantStatus(t, resp, http.StatusBadRequest)
				contains(t, body, "Nothing was connected")
				if _, err := r.st.PlatformConnection(ctx, a.userID); err == nil {
					t.Error("a connection was stored")
				}
			})
			t.Run("a callback without a session goes to log in", func(t *testing.T) {
				resp, _ := r.ts.browser(t).get("/platform/callback?code=x&state=" + q.Get("state"))
				wantStatus(t, resp, http.StatusSeeOther)
				if !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
					t.Errorf("Location %q", resp.Header.Get("Location"))
				}
			})

			t.Run("a denial on the platform connects nothing and spends the state", func(t *testing.T) {
				resp, _ := a.get("/platform/connect")
				state, _ := url.Parse(resp.Header.Get("Location"))
				cb := "/platform/callback?error=access_denied&state=" + url.QueryEscape(state.Query().Get("state"))
				resp, body := a.get(cb)
				wantStatus(t, resp, http.StatusBadRequest)
				contains(t, body, "did not grant access")
				resp, _ = a.get(strings.Replace(cb, "error=access_denied", "code=late", 1))
				wantStatus(t, resp, http.StatusBadRequest)
				if _, err := r.st.PlatformConnection(ctx, a.userID); err == nil {
					t.Error("a connection was stored")
				}
			})

			back, err := r.double.Approve(loc.String())
			if err != nil {
				t.Fatal(err)
			}
			cb, _ := url.Parse(back)
			resp, _ = a.get(cb.RequestURI())
			wantStatus(t, resp, http.StatusSeeOther)
			t.Run("a replayed state is refused", func(t *testing.T) {
				resp, _ := a.get(cb.RequestURI())
				wantStatus(t, resp, http.StatusBadRequest)
			})
			conn, err := r.st.PlatformConnection(ctx, a.userID)
			if err != nil || strings.Count(conn.TokenSealed, ".") != 1 {
				t.Fatalf("connection %+v, %v", conn, err)
			}

			_, body = a.get("/platform/import")
			for _, want := range []string{`name="site" value="` + northwind + `"`, `name="site" value="` + acme + `"`, "Northwind Studio",
				"northwind.example", "Acme Blog", "acme-blog.webflow.io", `name="csrf_token"`, `action="/platform/import"`} {
				contains(t, body, want)
			}

			// The import rides out a 429 (Retry-After 2) and a 503 (backoff).
			r.double.Throttle(1, "2")
			r.double.Fail(1, http.StatusServiceUnavailable)
			r.takeWaits()
			resp, body = a.postCSRF("/platform/import", url.Values{"site": {northwind, acme}})
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?done=platform-imported&scans=2" {
				t.Fatalf("import: %d\n%.800s", resp.StatusCode, body)
			}
			if got := fmt.Sprint(r.takeWaits()); got != "[2s 1s]" { // one call: try 1 is 429, try 2 is 503, try 3 succeeds
				t.Errorf("waits %s, want [2s 1s] (Retry-After, then the second try's backoff)", got)
			}
			imported := r.sites(t, a.userID)
			nw, ac := imported[northwind], imported[acme]
			if len(imported) != 2 || !nw.PlatformVerified || nw.Name != "Northwind Studio" || nw.Domain != "northwind.example" ||
				ac.Domain != "acme-blog.webflow.io" || strings.Join(ac.Pages, " ") != "/ /about /pricing /blog/" || nw.LastPublished == nil {
				t.Fatalf("imported %+v", imported)
			}
			firstScans := map[string]string{}
			for _, s := range []store.Site{nw, ac} {
				hooks := r.double.Webhooks(s.PlatformSiteID)
				if len(hooks) != 1 || hooks[0].TriggerType != "site_publish" || hooks[0].URL != r.ts.URL+"/api/webhooks/platform" || hooks[0].ID != s.PlatformWebhookID {
					t.Errorf("%s webhooks %+v, site's %q", s.Name, hooks, s.PlatformWebhookID)
				}
				scans, _ := r.st.ScansOf(ctx, a.userID, s.ID, 10)
				if len(scans) != 1 || scans[0].Strategy != store.StrategyBoth || scans[0].Trigger != store.TriggerImport {
					t.Errorf("%s scans %+v, want one first scan of both strategies", s.Name, scans)
				} else {
					firstScans[s.ID] = scans[0].ID
				}
			}

			t.Run("importing twice makes no second site, webhook or scan, and says so", func(t *testing.T) {
				resp, _ := a.postCSRF("/platform/import", url.Values{"site": {northwind, acme}})
				wantStatus(t, resp, http.StatusSeeOther)
				if loc := resp.Header.Get("Location"); loc != "/?done=platform-imported&scans=0" {
					t.Errorf("Location %q, want no scan queued", loc)
				} else if _, body := a.get(loc); !strings.Contains(body, "No scan queued") || strings.Contains(body, "first scans are running") {
					t.Errorf("the re-import's message does not say that no scan was queued:\n%.2000s", body)
				}
				if got := r.sites(t, a.userID); len(got) != 2 || got[northwind].ID != nw.ID {
					t.Errorf("sites after a second import: %+v", got)
				}
				for _, id := range []string{northwind, acme} {
					if n := len(r.double.Webhooks(id)); n != 1 {
						t.Errorf("%s has %d webhooks", id, n)
					}
				}
				if scans, _ := r.st.ScansOf(ctx, a.userID, nw.ID, 10); len(scans) != 1 {
					t.Errorf("%d scans after a second import", len(scans))
				}
				_, body := a.get("/platform/import")
				contains(t, body, "imported")
			})

			t.Run("a second account cannot import a connected site", func(t *testing.T) {
				bob := r.user(t, "bob@example.com")
				r.connect(t, bob)
				_, body := bob.get("/platform/import")
				contains(t, body, "unavailable: connected by another SitePulse account")
				resp, body := bob.postCSRF("/platform/import", url.Values{"site": {northwind}})
				wantStatus(t, resp, http.StatusConflict) // the request's fault, not the platform's
				contains(t, body, "another SitePulse account has connected this site")
				if got := r.sites(t, bob.userID); len(got) != 0 {
					t.Errorf("bob got %+v", got)
				}
				if got, _ := r.st.SiteByPlatformID(ctx, northwind); got.UserID != a.userID {
					t.Errorf("northwind is now %s's", got.UserID)
				}
			})

			// The first scans run; then a publish refreshes the pages before its scan.
			fake := scantest.NewPSI(t, "../testdata/psi")
			pool := scanner.NewPool(scanner.PoolConfig{Store: r.st, Auditor: psi.New(psi.Config{Endpoint: fake.Endpoint(), Key: "k"}),
				Platform: r.conn, Poll: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(r.logs, nil))})
			pool.Start()
			defer pool.Stop(ctx)
			for siteID, scanID := range firstScans {
				if sc := r.waitScan(t, a.userID, scanID); sc.Status != store.StatusComplete {
					t.Fatalf("first scan of %s: %s %s", siteID, sc.Status, sc.Error)
				}
			}
			if got := paths(t, r.st, a.userID, firstScans[ac.ID]); got != "/ /about /blog/ /pricing" {
				t.Errorf("first scan audited %q", got)
			}

			publish := func(t *testing.T) store.Scan {
				t.Helper()
				codes, err := r.double.Publish(ctx, acme)
				if err != nil || fmt.Sprint(codes) != "[200]" {
					t.Fatalf("publish: %v %v", codes, err)
				}
				scans, _ := r.st.ScansOf(ctx, a.userID, ac.ID, 1)
				if len(scans) != 1 || scans[0].Trigger != store.TriggerWebhook {
					t.Fatalf("after publish: %+v", scans)
				}
				return r.waitScan(t, a.userID, scans[0].ID)
			}
			t.Run("a publish audits a page published since the import", func(t *testing.T) {
				r.double.AddPage(acme, platform.Page{ID: "new", PublishedPath: "/fast"})
				sc := publish(t)
				if got := paths(t, r.st, a.userID, sc.ID); sc.Status != store.StatusComplete || got != "/ /about /blog/ /fast /pricing" {
					t.Errorf("publish scan %s audited %q", sc.Status, got)
				}
			})
			t.Run("a publish with the platform down audits the saved list", func(t *testing.T) {
				r.double.AddPage(acme, platform.Page{ID: "later", PublishedPath: "/later"})
				r.double.Fail(100, http.StatusBadGateway)
				defer r.double.Fail(0, 0)
				sc := publish(t)
				if got := paths(t, r.st, a.userID, sc.ID); sc.Status != store.StatusComplete || got != "/ /about /blog/ /fast /pricing" {
					t.Errorf("publish scan %s audited %q", sc.Status, got)
				}
				contains(t, r.logs.String(), "platform pages not refreshed; auditing the saved list")
			})

			t.Run("a revoked token asks to reconnect", func(t *testing.T) {
				r.double.Revoke()
				resp, body := a.get("/platform/import")
				wantStatus(t, resp, http.StatusConflict)
				contains(t, body, "Reconnect platform")
				if c, _ := r.st.PlatformConnection(ctx, a.userID); c.DisabledAt == nil {
					t.Error("the connection is still enabled")
				}
				_, body = a.get("/")
				contains(t, body, "Reconnect platform")
				r.connect(t, a) // a fresh approval works again
				resp, _ = a.get("/platform/import")
				wantStatus(t, resp, http.StatusOK)
			})

			t.Run("disconnect deletes the webhooks, forgets the token, keeps the sites", func(t *testing.T) {
				resp, _ := a.postCSRF("/platform/disconnect", nil)
				wantStatus(t, resp, http.StatusSeeOther)
				for _, id := range []string{northwind, acme} {
					if hooks := r.double.Webhooks(id); len(hooks) != 0 {
						t.Errorf("%s still has webhooks %+v", id, hooks)
					}
				}
				if _, err := r.st.PlatformConnection(ctx, a.userID); err == nil {
					t.Error("the token is still stored")
				}
				kept, _ := r.st.Site(ctx, a.userID, ac.ID)
				if kept.PlatformSiteID != "" || kept.PlatformVerified {
					t.Errorf("site still linked: %+v", kept)
				}
				before, _ := r.st.ScansOf(ctx, a.userID, ac.ID, 100)
				if len(before) != 3 {
					t.Errorf("%d scans kept, want 3", len(before))
				}
				// Webflow's publish for a disconnected site (its webhook deleted, a delivery in
				// flight) is the interface's "no site found".
				body := []byte(fmt.Sprintf(`{"triggerType":"site_publish","payload":{"siteId":%q}}`, acme))
				ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
				req, _ := http.NewRequest(http.MethodPost, r.ts.URL+"/api/webhooks/platform", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-webflow-timestamp", ts)
				req.Header.Set("x-webflow-signature", platformtest.Sign(appSecret, ts, body))
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got := readBody(t, res)
				if res.StatusCode != 200 || strings.TrimSpace(got) != `{"ok":true}` {
					t.Errorf("publish after disconnect: %d %s", res.StatusCode, got)
				}
				if after, _ := r.st.ScansOf(ctx, a.userID, ac.ID, 100); len(after) != len(before) {
					t.Errorf("a publish after disconnect enqueued a scan")
				}
			})
			if strings.Contains(r.logs.String(), "Bearer") {
				t.Error("a token reached the log")
			}
		})
	}
}

// TestPlatformImportFollowsPagination imports a site of 230 pages: three pages of the API.
func TestPlatformImportFollowsPagination(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			r := newPlatformRig(t, b.Open(t))
			big := platformtest.Site{Site: platform.Site{ID: "65000000000000000000b16", DisplayName: "Big", ShortName: "big"}}
			for i := range 230 {
				big.Pages = append(big.Pages, platform.Page{ID: fmt.Sprint(i), PublishedPath: fmt.Sprintf("/p/%03d", i), Draft: i%10 == 0})
			}
			r.double.AddSite(big)
			a := r.user(t, "ada@example.com")
			r.connect(t, a)
			resp, body := a.postCSRF("/platform/import", url.Values{"site": {big.ID, "not-a-site-of-this-connection"}})
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("import: %d\n%.600s", resp.StatusCode, body)
			}
			site := r.sites(t, a.userID)[big.ID]
			// 207 published; the site keeps MAX_PAGES_PER_SCAN of them, and its first scan knows all.
			if len(site.Pages) != 50 || site.Pages[0] != "/p/001" || site.Pages[49] != "/p/055" {
				t.Errorf("%d pages (%v...), want the first 50 of 207 published", len(site.Pages), site.Pages[:min(3, len(site.Pages))])
			}
			if scans, _ := r.st.ScansOf(context.Background(), a.userID, site.ID, 1); len(scans) != 1 || scans[0].PagesFound != 207 {
				t.Errorf("first scan %+v, want 207 pages found", scans)
			}
			if n := r.double.Calls("GET /v2/sites/" + big.ID + "/pages"); n != 3 {
				t.Errorf("%d page list calls, want 3 (limit 100: 0, 100, 200)", n)
			}
			if got := r.sites(t, a.userID); len(got) != 1 {
				t.Errorf("sites %+v: an id the connection does not see was imported", got)
			}
		})
	}
}

// TestPlatformOff: without PLATFORM_CLIENT_ID the connect button is hidden and the page says why.
func TestPlatformOff(t *testing.T) {
	ts := newTestServer(t, memory.New())
	a := ts.browser(t)
	a.signup("ada@example.com")
	_, body := a.get("/")
	if strings.Contains(body, `href="/platform/connect"`) {
		t.Error("the connect button shows without a platform app")
	}
	contains(t, body, "has not set up a platform app")
	resp, body := a.get("/platform/connect")
	wantStatus(t, resp, http.StatusNotFound)
	contains(t, body, "Connecting a platform is off")
}

// TestPlatformImportResumesAfterAFault: the webhook cannot be created (the platform keeps
// failing); the page says so, and ticking the site again finishes the import with one site, one
// webhook and one first scan.
func TestPlatformImportResumesAfterAFault(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			r := newPlatformRig(t, b.Open(t))
			a := r.user(t, "ada@example.com")
			r.connect(t, a)
			r.double.FailCall("POST /v2/sites/"+acme+"/webhooks", 4) // every try of one call
			resp, body := a.postCSRF("/platform/import", url.Values{"site": {acme}})
			wantStatus(t, resp, http.StatusBadGateway)
			contains(t, body, "tick it again to finish")
			if n := len(r.double.Webhooks(acme)); n != 0 {
				t.Fatalf("%d webhooks after the failure", n)
			}
			resp, _ = a.postCSRF("/platform/import", url.Values{"site": {acme}})
			wantStatus(t, resp, http.StatusSeeOther)
			sites := r.sites(t, a.userID)
			if len(sites) != 1 || len(r.double.Webhooks(acme)) != 1 || sites[acme].PlatformWebhookID != r.double.Webhooks(acme)[0].ID {
				t.Fatalf("after the second try: sites %+v, webhooks %+v", sites, r.double.Webhooks(acme))
			}
			if scans, _ := r.st.ScansOf(ctx, a.userID, sites[acme].ID, 10); len(scans) != 1 {
				t.Errorf("%d first scans, want 1", len(scans))
			}
		})
	}
}
