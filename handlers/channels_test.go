package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/netguard"
	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// hook is a local receiver standing in for Slack, Teams, Discord or a webhook endpoint: it
// keeps what it got and answers status.
type hook struct {
	*httptest.Server
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
	status int
}

func newHook(t *testing.T) *hook {
	h := &hook{status: 200}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got, h.bodies = append(h.got, r), append(h.bodies, b)
		status := h.status
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.Close)
	return h
}

// channelsServer is a signed-in browser on a server whose outbound guard exempts the hook only,
// as SCAN_ALLOW_PRIVATE never needs to be on for a test.
func channelsServer(t *testing.T, st store.Store, hk *hook) (*testServer, *browser) {
	ts, b, _ := channelsServerMail(t, st, hk)
	return ts, b
}

// mailbox is the Mail double: what would have gone through SMTP, kept since the last clear (the
// sign-up messages go on to the test server's outbox too).
type mailbox struct {
	mu   sync.Mutex
	next func(ctx context.Context, to, subject, body string) error
	sent []sentMail
}

func (m *mailbox) send(ctx context.Context, to, subject, body string) error {
	m.mu.Lock()
	m.sent = append(m.sent, sentMail{to: to, subject: subject, body: body})
	m.mu.Unlock()
	return m.next(ctx, to, subject, body)
}

func (m *mailbox) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = nil
}

func (m *mailbox) to(addr string) []sentMail {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sentMail
	for _, x := range m.sent {
		if x.to == addr {
			out = append(out, x)
		}
	}
	return out
}

func channelsServerMail(t *testing.T, st store.Store, hk *hook) (*testServer, *browser, *mailbox) {
	ts := &testServer{store: st, now: time.Date(2026, 11, 24, 14, 2, 0, 0, time.UTC)}
	mb := &mailbox{next: outboxFor(st).send}
	h, err := NewHandler(withServers(st, Deps{BaseURL: "http://sitepulse.test", Now: func() time.Time { return ts.now },
		PasswordIterations: 1000, ChannelKeys: platform.RandomKeys(), ChannelAllowHTTP: true, Mail: mb.send,
		Guard: netguard.Guard{Exempt: netip.MustParseAddrPort(strings.TrimPrefix(hk.URL, "http://"))}}))
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = httptest.NewServer(h)
	t.Cleanup(ts.Close)
	b := ts.browser(t)
	b.signup("team@example.com")
	u, err := st.UserByEmail(context.Background(), "team@example.com")
	if err != nil {
		t.Fatal(err)
	}
	b.userID = u.ID
	return ts, b, mb
}

// joinAs signs up a browser for email and makes it a member of workspace ws with role.
func joinAs(t *testing.T, ts *testServer, st store.Store, ws, inviter, email string, role store.Role) *browser {
	t.Helper()
	b := ts.browser(t)
	b.signup(email)
	u, err := st.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	b.userID = u.ID
	tok := store.NewID()
	must(t, st.CreateInvitation(context.Background(), store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: ws, Email: email, Role: role,
		InvitedBy: inviter, CreatedAt: ts.now, ExpiresAt: ts.now.Add(store.InvitationTTL)}))
	if _, err := st.AcceptInvitation(context.Background(), tok, u.ID, email, ts.now); err != nil {
		t.Fatal(err)
	}
	return b
}

var regexpSecret = regexp.MustCompile(`value="(whsec_[A-Za-z0-9_-]+)"`)

func TestNotificationChannels(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			hk := newHook(t)
			ts, b, mb := channelsServerMail(t, st, hk)
			ws := b.userID // the personal workspace
			page := "/workspaces/" + ws + "/notifications"
			chURL := func(id, action string) string { return "/workspaces/" + ws + "/channels/" + id + "/" + action }
			add := func(kind, name, u string, events ...string) (*http.Response, string) {
				return b.postCSRF("/workspaces/"+ws+"/channels", url.Values{"name": {name}, "kind": {kind}, "url": {u}, "events": events})
			}
			channels := func() []store.Channel {
				chs, err := st.ChannelsIn(context.Background(), b.userID, ws)
				must(t, err)
				return chs
			}
			viewer := joinAs(t, ts, st, ws, b.userID, "viewer@example.com", store.RoleViewer)
			editor := joinAs(t, ts, st, ws, b.userID, "editor@example.com", store.RoleEditor)

			t.Run("a Slack channel is saved sealed and shown masked", func(t *testing.T) {
				resp, _ := add("slack", "#web-perf", hk.URL+"/services/T000/B000/abcdXYZ9", store.EventRegressionConfirmed, store.EventBudgetBroken)
				wantStatus(t, resp, http.StatusSeeOther)
				chs := channels()
				if len(chs) != 1 || strings.Contains(chs[0].URLSealed, "abcdXYZ9") || chs[0].WorkspaceID != ws {
					t.Fatalf("channels = %+v, want one of the workspace with its URL sealed", chs)
				}
				for _, who := range []*browser{b, editor, viewer} {
					_, body := who.get(page)
					contains(t, body, "#web-perf")
					contains(t, body, "/…XYZ9")
					if strings.Contains(body, "B000/abcd") {
						t.Errorf("the page shows the channel URL in full")
					}
				}
				_, body := viewer.get(page)
				if strings.Contains(body, "Send test") || strings.Contains(body, "Add a channel") {
					t.Error("a viewer is shown the forms")
				}
				_, body = b.get("/workspaces/" + ws)
				contains(t, body, `href="/workspaces/`+ws+`/notifications"`)
			})
			t.Run("the old address leads to the personal workspace's page", func(t *testing.T) {
				resp, _ := b.get("/settings/notifications")
				if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != page {
					t.Errorf("GET /settings/notifications ends at %s, want %s", loc, page)
				}
			})
			t.Run("a viewer may not add, test or delete a channel: 403, nothing changed", func(t *testing.T) {
				chs := channels()
				resp, _ := viewer.postCSRF("/workspaces/"+ws+"/channels", url.Values{"name": {"v"}, "kind": {"slack"}, "url": {hk.URL + "/v"}, "events": {store.EventScanFailed}})
				wantStatus(t, resp, http.StatusForbidden)
				for _, action := range []string{"test", "delete"} {
					resp, _ := viewer.postCSRF(chURL(chs[0].ID, action), nil)
					wantStatus(t, resp, http.StatusForbidden)
				}
				if len(channels()) != 1 || len(hk.got) != 0 {
					t.Errorf("a viewer changed something: %d channels, %d requests", len(channels()), len(hk.got))
				}
			})
			t.Run("Send test posts a Block Kit message and logs the delivery", func(t *testing.T) {
				chs := channels()
				resp, _ := editor.postCSRF(chURL(chs[0].ID, "test"), nil)
				wantStatus(t, resp, http.StatusSeeOther)
				if loc := resp.Header.Get("Location"); !strings.Contains(loc, "done=test-sent") {
					t.Errorf("redirect to %s, want test-sent", loc)
				}
				if len(hk.bodies) != 1 || !strings.Contains(string(hk.bodies[0]), `"blocks"`) || !strings.Contains(string(hk.bodies[0]), "Test message from SitePulse") {
					t.Fatalf("hook got %q", hk.bodies)
				}
				_, body := b.get(page)
				contains(t, body, `<span class="tag good">delivered</span>`)
			})
			t.Run("a signed webhook channel shows its secret once, and the test verifies under it", func(t *testing.T) {
				resp, _ := add("webhook", "CI hook", hk.URL+"/hook", store.EventScanFailed)
				wantStatus(t, resp, http.StatusSeeOther)
				_, shown := b.get(resp.Header.Get("Location"))
				m := regexpSecret.FindStringSubmatch(shown)
				if m == nil {
					t.Fatalf("no secret shown:\n%s", shown)
				}
				// The notice says where verifying is explained, on a page that exists (issue 43: it
				// said "README", which a user of the service does not have): this page's section,
				// with the documented openssl lines (docs/alerts.md, which a test runs).
				contains(t, shown, `<a href="#verify-deliveries">`)
				contains(t, shown, `id="verify-deliveries"`)
				doc, err := os.ReadFile(filepath.Join("..", "docs", "alerts.md"))
				must(t, err)
				_, lines, _ := strings.Cut(string(doc), "<!-- verify-signature -->\n```sh\n")
				lines, _, _ = strings.Cut(lines, "```")
				if lines == "" || !strings.Contains(shown, template.HTMLEscapeString(lines)) {
					t.Errorf("the page's section lacks the documented lines:\n%s", lines)
				}
				if strings.Contains(shown, "README") {
					t.Error("the page points at the README")
				}
				_, again := b.get(page)
				if strings.Contains(again, m[1]) {
					t.Error("the secret is shown again")
				}
				chs := channels()
				i := slices.IndexFunc(chs, func(c store.Channel) bool { return c.Kind == store.ChannelWebhook })
				b.postCSRF(chURL(chs[i].ID, "test"), nil)
				last := len(hk.got) - 1
				r, body := hk.got[last], hk.bodies[last]
				if err := notify.Verify([]byte(m[1]), r.Header.Get("X-SitePulse-Signature"), body, time.Date(2026, 11, 24, 14, 2, 0, 0, time.UTC), 5*time.Minute); err != nil {
					t.Errorf("signature: %v", err)
				}
				var e map[string]any
				json.Unmarshal(body, &e)
				if e["type"] != "test" || r.Header.Get("X-SitePulse-Delivery") != e["id"] {
					t.Errorf("event %v, delivery header %q", e, r.Header.Get("X-SitePulse-Delivery"))
				}
			})
			t.Run("a receiver answering 410 is logged as failed with its answer", func(t *testing.T) {
				hk.mu.Lock()
				hk.status = 410
				hk.mu.Unlock()
				mb.clear()
				chs := channels()
				i := slices.IndexFunc(chs, func(c store.Channel) bool { return c.Kind == store.ChannelSlack })
				resp, _ := b.postCSRF(chURL(chs[i].ID, "test"), nil)
				if loc := resp.Header.Get("Location"); !strings.Contains(loc, "done=test-failed") {
					t.Errorf("redirect to %s, want test-failed", loc)
				}
				_, body := b.get(page)
				contains(t, body, `<span class="tag poor">failed</span>`)
				contains(t, body, "410 Gone")
				if c, _ := st.Channel(context.Background(), ws, chs[i].ID); c.FailingSince != nil || len(mb.to("team@example.com")) != 0 {
					t.Error("a failed test marked the channel failing or e-mailed its owner")
				}
			})
			t.Run("URLs on loopback, metadata or plain bad input are refused with the form's message", func(t *testing.T) {
				for _, c := range []struct{ url, want string }{
					{"http://127.0.0.1:1/hook", "SitePulse does not send to this address"},
					{"http://169.254.169.254/latest/meta-data/", "SitePulse does not send to this address"},
					{"https://user:pw@example.com/x", "Paste the whole webhook URL"},
					{"ftp://example.com/x", "must start with https://"},
					{"", "Paste the webhook URL."},
				} {
					resp, body := add("discord", "d", c.url, store.EventScanFailed)
					wantStatus(t, resp, http.StatusUnprocessableEntity)
					contains(t, body, c.want)
				}
				// A name that resolves inside is refused with the kind of address, never the
				// address: the form would otherwise map the service's internal DNS.
				resp, body := add("discord", "d", "http://localhost:1/hook", store.EventScanFailed)
				wantStatus(t, resp, http.StatusUnprocessableEntity)
				contains(t, body, "refused to connect to localhost: it resolves to a loopback address")
				if strings.Contains(body, "resolves to 127.0.0.1") || strings.Contains(body, "resolves to ::1") {
					t.Errorf("the refusal names the address localhost resolves to:\n%s", body)
				}
				resp, body = add("irc", "x", hk.URL, store.EventScanFailed)
				wantStatus(t, resp, http.StatusUnprocessableEntity)
				contains(t, body, "Choose Slack")
				resp, body = add("teams", "x", hk.URL, "scan.started")
				wantStatus(t, resp, http.StatusUnprocessableEntity)
				contains(t, body, "Choose the events")
				resp, _ = b.postCSRF("/workspaces/"+ws+"/channels", url.Values{"name": {"x"}, "kind": {"teams"}, "url": {hk.URL}, "events": {store.EventScanFailed}, "sites": {store.NewID()}})
				wantStatus(t, resp, http.StatusUnprocessableEntity)
				// A site of another workspace the user belongs to is not this workspace's.
				other := store.Workspace{ID: store.NewID(), Name: "Agency", CreatedAt: ts.now}
				must(t, st.CreateWorkspace(context.Background(), other, b.userID, 10))
				site := store.Site{ID: store.NewID(), UserID: b.userID, WorkspaceID: other.ID, Name: "Elsewhere", Domain: "elsewhere.test", Pages: []string{"/"}, CreatedAt: ts.now}
				must(t, st.CreateSite(context.Background(), site))
				resp, body = b.postCSRF("/workspaces/"+ws+"/channels", url.Values{"name": {"x"}, "kind": {"teams"}, "url": {hk.URL}, "events": {store.EventScanFailed}, "sites": {site.ID}})
				wantStatus(t, resp, http.StatusUnprocessableEntity)
				contains(t, body, "Choose sites from the list.")
				if n := len(channels()); n != 2 {
					t.Errorf("%d channels after refused saves, want 2", n)
				}
			})
			t.Run("an e-mail channel needs no URL and its test goes to the members who opted in", func(t *testing.T) {
				must(t, st.SetMemberNotify(context.Background(), ws, editor.userID, false))
				resp, _ := add("email", "Team mail", "", store.EventRegressionConfirmed)
				wantStatus(t, resp, http.StatusSeeOther)
				chs := channels()
				i := slices.IndexFunc(chs, func(c store.Channel) bool { return c.Kind == store.ChannelEmail })
				if i < 0 || chs[i].URLSealed != "" {
					t.Fatalf("channels = %+v, want an e-mail one without URL", chs)
				}
				mb.clear()
				resp, _ = b.postCSRF(chURL(chs[i].ID, "test"), nil)
				if loc := resp.Header.Get("Location"); !strings.Contains(loc, "done=test-sent") {
					t.Errorf("redirect to %s, want test-sent", loc)
				}
				owner, ed, vw := mb.to("team@example.com"), mb.to("editor@example.com"), mb.to("viewer@example.com")
				if len(owner) != 1 || len(vw) != 1 || len(ed) != 0 || !strings.Contains(owner[0].subject, "Test message from SitePulse") {
					t.Errorf("mails: owner %v, viewer %v, editor (opted out) %v", owner, vw, ed)
				}
			})
			t.Run("another workspace's channel is a 404 to see, test and delete, and stays", func(t *testing.T) {
				chs := channels()
				other := ts.browser(t)
				other.signup("stranger@example.com")
				oid := other.userIDOf(t, st, "stranger@example.com")
				resp, _ := other.get(page)
				wantStatus(t, resp, http.StatusNotFound)
				for _, action := range []string{"test", "delete"} {
					resp, _ := other.postCSRF(chURL(chs[0].ID, action), nil)
					wantStatus(t, resp, http.StatusNotFound)
					// Through the stranger's own workspace: not a channel of it.
					resp, _ = other.postCSRF("/workspaces/"+oid+"/channels/"+chs[0].ID+"/"+action, nil)
					wantStatus(t, resp, http.StatusNotFound)
				}
				if _, err := st.Channel(context.Background(), ws, chs[0].ID); err != nil {
					t.Errorf("the channel is gone: %v", err)
				}
			})
			t.Run("a long site list gets a filter box", func(t *testing.T) {
				_, body := b.get(page)
				if strings.Contains(body, "data-filter=") {
					t.Error("a filter box over a short list")
				}
				for i := range 11 {
					must(t, st.CreateSite(context.Background(), store.Site{ID: store.NewID(), UserID: b.userID, WorkspaceID: ws,
						Name: fmt.Sprintf("Listed %02d", i), Domain: fmt.Sprintf("listed-%02d.test", i), Pages: []string{"/"}, CreatedAt: ts.now}))
				}
				_, body = b.get(page)
				contains(t, body, `data-filter="sites-checklist"`)
				contains(t, body, `id="sites-checklist"`)
				contains(t, body, `<script src="/static/filter.js" defer></script>`)
				resp, js := b.get("/static/filter.js")
				wantStatus(t, resp, http.StatusOK)
				contains(t, js, "input[data-filter]")
			})
			t.Run("an editor deletes a channel and its log", func(t *testing.T) {
				chs := channels()
				resp, _ := editor.postCSRF(chURL(chs[0].ID, "delete"), nil)
				wantStatus(t, resp, http.StatusSeeOther)
				if left := channels(); len(left) != len(chs)-1 {
					t.Errorf("%d channels left, want %d", len(left), len(chs)-1)
				}
			})
		})
	}
}

// TestWebhookSubscribeStaysAbsent: channels are configured in the app, not by API; the
// interface's planned POST /api/external/webhooks/subscribe stays a JSON 404.
func TestWebhookSubscribeStaysAbsent(t *testing.T) {
	hk := newHook(t)
	ts, _ := channelsServer(t, storetest.Backends(t)[0].Open(t), hk)
	resp, err := http.Post(ts.URL+"/api/external/webhooks/subscribe", "application/json", strings.NewReader(`{"url":"`+hk.URL+`","events":["regression.confirmed"]}`))
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"error"`) {
		t.Errorf("subscribe: %d %s, want a JSON 404", resp.StatusCode, body)
	}
	if len(hk.got) != 0 {
		t.Errorf("the subscribe attempt reached the receiver")
	}
}
