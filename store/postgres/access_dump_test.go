package postgres_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"sitepulse/handlers"
	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/scanner/platform"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// A site's access setting, saved through its edit page as a person would, is sealed at rest: a
// dump of every table holds none of its credentials, whatever the kind (issue 38).
func TestSiteAccessDumpHoldsNoSecret(t *testing.T) {
	pg := storetest.Postgres(t)
	ctx := context.Background()
	now := time.Now()
	u := store.User{ID: store.NewID(), Email: "owner@example.com", PasswordHash: "x", CreatedAt: now}
	if err := pg.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	session, hash := store.NewSecret("")
	csrf, _ := store.NewSecret("")
	if err := pg.CreateSession(ctx, store.Session{TokenHash: hash, UserID: u.ID, CSRF: csrf, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: "Members club", Domain: "members.example", CreatedAt: now}
	if err := pg.CreateSite(ctx, site); err != nil {
		t.Fatal(err)
	}
	h, err := handlers.NewHandler(handlers.Deps{Auth: pg, Accounts: pg, Sites: pg, Budgets: pg, Scans: pg, Reports: pg, API: pg, Webhooks: pg,
		Connections: pg, Workspaces: pg, Channels: pg, Health: pg, CI: pg, SSO: pg, SecurityLog: pg, BaseURL: "http://127.0.0.1", SignedInAudits: true, ChannelKeys: platform.RandomKeys(),
		OAuth: oauth.New(oauth.Config{Store: pg, BaseURL: "http://127.0.0.1"}), MCP: mcp.New(mcp.Config{Sites: pg, Scans: pg, Writes: pg, BaseURL: "http://127.0.0.1"})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	secrets := []string{"dump-user-7c1", "dump-pw-4e2a", "dump-cookie-9b3f", "dump-form-pw-5d6c", "Dump proof 8f0e"}
	for _, form := range []url.Values{
		{"kind": {"basic"}, "username": {"dump-user-7c1"}, "password": {"dump-pw-4e2a"}},
		{"kind": {"cookies"}, "cookies": {"session=dump-cookie-9b3f"}},
		{"kind": {"form"}, "login_url": {"https://members.example/login"}, "fields": {"email=a@example.com\npassword=dump-form-pw-5d6c"}, "proof": {"Dump proof 8f0e"}},
	} {
		form.Set("csrf_token", csrf)
		req, _ := http.NewRequest("POST", srv.URL+"/sites/"+site.ID+"/access", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "session", Value: session})
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("save %s: %d", form.Get("kind"), resp.StatusCode)
		}
		dump, err := pg.DumpText(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(dump, `"kind": "`+form.Get("kind")+`"`) || !strings.Contains(dump, "Members club") {
			t.Fatalf("the dump lacks the setting's row:\n%s", dump)
		}
		for _, s := range secrets {
			if strings.Contains(dump, s) {
				t.Errorf("after saving %s, the dump holds %q", form.Get("kind"), s)
			}
		}
	}
}
