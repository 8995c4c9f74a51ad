package handlers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
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
	ts := &testServer{store: st, now: time.Date(2026, 11, 24, 14, 2, 0, 0, time.UTC)}
	h, err := NewHandler(withServers(st, Deps{BaseURL: "http://sitepulse.test", Now: func() time.Time { return ts.now },
		PasswordIterations: 1000, ChannelKeys: platform.RandomKeys(), ChannelAllowHTTP: true,
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
	return ts, b
}

var regexpSecret = regexp.MustCompile(`value="(whsec_[A-Za-z0-9_-]+)"`)

func TestNotificationChannels(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			hk := newHook(t)
			ts, b := channelsServer(t, st, hk)
			add := func(kind, name, u string, events ...string) (*http.Response, string) {
				return b.postCSRF("/settings/channels", url.Values{"name": {name}, "kind": {kind}, "url": {u}, "events": events})
			}

			t.Run("a Slack channel is saved sealed and shown masked", func(t *testing.T) {
				resp, _ := add("slack", "#web-perf", hk.URL+"/services/T000/B000/abcdXYZ9", store.EventRegressionConfirmed, store.EventBudgetBroken)
				wantStatus(t, resp, http.StatusSeeOther)
				chs, _ := st.ChannelsOf(context.Background(), b.userID)
				if len(chs) != 1 || strings.Contains(chs[0].URLSealed, "abcdXYZ9") {
					t.Fatalf("channels = %+v, want one with its URL sealed", chs)
				}
				_, page := b.get("/settings/notifications")
				contains(t, page, "#web-perf")
				contains(t, page, "/…XYZ9")
				if strings.Contains(page, "B000/abcd") {
					t.Errorf("the page shows the channel URL in full")
				}
			})
			t.Run("Send test posts a Block Kit message and logs the delivery", func(t *testing.T) {
				chs, _ := st.ChannelsOf(context.Background(), b.userID)
				resp, _ := b.postCSRF("/settings/channels/"+chs[0].ID+"/test", nil)
				wantStatus(t, resp, http.StatusSeeOther)
				if loc := resp.Header.Get("Location"); !strings.Contains(loc, "done=test-sent") {
					t.Errorf("redirect to %s, want test-sent", loc)
				}
				if len(hk.bodies) != 1 || !strings.Contains(string(hk.bodies[0]), `"blocks"`) || !strings.Contains(string(hk.bodies[0]), "Test message from SitePulse") {
					t.Fatalf("hook got %q", hk.bodies)
				}
				_, page := b.get("/settings/notifications")
				contains(t, page, `<span class="tag good">delivered</span>`)
			})
			t.Run("a signed webhook channel shows its secret once, and the test verifies under it", func(t *testing.T) {
				resp, page := add("webhook", "CI hook", hk.URL+"/hook", store.EventScanFailed)
				wantStatus(t, resp, http.StatusOK)
				m := regexpSecret.FindStringSubmatch(page)
				if m == nil {
					t.Fatalf("no secret shown:\n%s", page)
				}
				_, again := b.get("/settings/notifications")
				if strings.Contains(again, m[1]) {
					t.Error("the secret is shown again")
				}
				chs, _ := st.ChannelsOf(context.Background(), b.userID)
				i := slices.IndexFunc(chs, func(c store.Channel) bool { return c.Kind == store.ChannelWebhook })
				b.postCSRF("/settings/channels/"+chs[i].ID+"/test", nil)
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
				chs, _ := st.ChannelsOf(context.Background(), b.userID)
				i := slices.IndexFunc(chs, func(c store.Channel) bool { return c.Kind == store.ChannelSlack })
				resp, _ := b.postCSRF("/settings/channels/"+chs[i].ID+"/test", nil)
				if loc := resp.Header.Get("Location"); !strings.Contains(loc, "done=test-failed") {
					t.Errorf("redirect to %s, want test-failed", loc)
				}
				_, page := b.get("/settings/notifications")
				contains(t, page, `<span class="tag poor">failed</span>`)
				contains(t, page, "410 Gone")
			})
			t.Run("URLs on loopback, metadata or plain bad input are refused with the form's message", func(t *testing.T) {
				for _, c := range []struct{ url, want string }{
					{"http://127.0.0.1:1/hook", "SitePulse does not send to this address"},
					{"http://169.254.169.254/latest/meta-data/", "SitePulse does not send to this address"},
					{"https://user:pw@example.com/x", "Paste the whole webhook URL"},
					{"ftp://example.com/x", "must start with https://"},
					{"", "Paste the webhook URL."},
				} {
					resp, page := add("discord", "d", c.url, store.EventScanFailed)
					wantStatus(t, resp, http.StatusUnprocessableEntity)
					contains(t, page, c.want)
				}
				resp, page := add("irc", "x", hk.URL, store.EventScanFailed)
				wantStatus(t, resp, http.StatusUnprocessableEntity)
				contains(t, page, "Choose Slack")
				resp, page = add("teams", "x", hk.URL, "scan.started")
				wantStatus(t, resp, http.StatusUnprocessableEntity)
				contains(t, page, "Choose the events")
				resp, _ = b.postCSRF("/settings/channels", url.Values{"name": {"x"}, "kind": {"teams"}, "url": {hk.URL}, "events": {store.EventScanFailed}, "sites": {store.NewID()}})
				wantStatus(t, resp, http.StatusUnprocessableEntity)
			})
			t.Run("another account's channel is a 404 to test and to delete, and stays", func(t *testing.T) {
				chs, _ := st.ChannelsOf(context.Background(), b.userID)
				other := ts.browser(t)
				other.signup("stranger@example.com")
				for _, path := range []string{"/test", "/delete"} {
					resp, _ := other.postCSRF("/settings/channels/"+chs[0].ID+path, nil)
					wantStatus(t, resp, http.StatusNotFound)
				}
				if _, err := st.Channel(context.Background(), b.userID, chs[0].ID); err != nil {
					t.Errorf("the channel is gone: %v", err)
				}
			})
			t.Run("delete removes the channel and its log", func(t *testing.T) {
				chs, _ := st.ChannelsOf(context.Background(), b.userID)
				resp, _ := b.postCSRF("/settings/channels/"+chs[0].ID+"/delete", nil)
				wantStatus(t, resp, http.StatusSeeOther)
				if left, _ := st.ChannelsOf(context.Background(), b.userID); len(left) != 1 {
					t.Errorf("%d channels left, want 1", len(left))
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
