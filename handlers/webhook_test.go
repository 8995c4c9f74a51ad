package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/scanner"
	"sitepulse/scanner/platform/platformtest"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

const webhookSecret = "whsec_test-secret"

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// webhookRig is a SitePulse handler with a platform secret, a fixed clock and a fixed jitter,
// and one user owning a site connected as platform site "plat-1".
type webhookRig struct {
	t      *testing.T
	st     store.Store
	srv    *httptest.Server
	now    time.Time
	jitter time.Duration
	user   store.User
	site   store.Site
	logs   *scantest.LogBuffer
}

func newWebhookRig(t *testing.T, st store.Store, secret string, opts ...func(*Deps)) *webhookRig {
	t.Helper()
	w := &webhookRig{t: t, st: st, now: time.Now().UTC().Truncate(time.Millisecond), jitter: 3 * time.Second, logs: &scantest.LogBuffer{}}
	d := withStore(st, Deps{BaseURL: "http://sitepulse.test", PasswordIterations: 1000,
		Now: func() time.Time { return w.now }, PlatformSecret: secret, WebhookJitter: func() time.Duration { return w.jitter },
		Log: slog.New(slog.NewTextHandler(w.logs, nil))})
	for _, o := range opts {
		o(&d)
	}
	h, err := NewHandler(withServers(st, d))
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(h)
	t.Cleanup(w.srv.Close)
	ctx := context.Background()
	w.user = store.User{ID: store.NewID(), Email: "hook-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", NotifyRegressions: true, CreatedAt: w.now}
	if err := st.CreateUser(ctx, w.user); err != nil {
		t.Fatal(err)
	}
	w.site = store.Site{ID: store.NewID(), UserID: w.user.ID, Name: "Sample", Domain: "sample.test", PlatformSiteID: "plat-" + store.NewID()[:8],
		Pages: []string{"/", "/about", "/blog/", "/fast", "/pricing"}, CreatedAt: w.now}
	if err := st.CreateSite(ctx, w.site); err != nil {
		t.Fatal(err)
	}
	return w
}

// post sends body with the given signature header (omitted when sig is "-").
func (w *webhookRig) post(body, sig string) (int, string) {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/api/webhooks/platform", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if sig != "-" {
		req.Header.Set("x-platform-signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.StatusCode, readBody(w.t, resp)
}

// publish posts a signed publish event; extra fields make a distinct event with its own _id.
func (w *webhookRig) publish(extra string) (int, string) {
	body := w.event(extra)
	return w.post(body, sign(webhookSecret, body))
}

func (w *webhookRig) event(extra string) string {
	return fmt.Sprintf(`{"siteId":%q,"_id":"evt%x","publishedBy":{"name":"Ada"}%s}`, w.site.PlatformSiteID, sha256.Sum256([]byte(extra)), extra)
}

// postWebflow sends body as Webflow's delivery, with x-webflow-timestamp ts and
// x-webflow-signature sig (each omitted when "-").
func (w *webhookRig) postWebflow(body, ts, sig string) (int, string) {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/api/webhooks/platform", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if ts != "-" {
		req.Header.Set("x-webflow-timestamp", ts)
	}
	if sig != "-" {
		req.Header.Set("x-webflow-signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.StatusCode, readBody(w.t, resp)
}

// webflowEvent is Webflow's site_publish body for the rig's site (Data API v2 shape).
func (w *webhookRig) webflowEvent() string {
	return fmt.Sprintf(`{"triggerType":"site_publish","payload":{"siteId":%q,"publishedOn":"2026-11-01T12:00:00Z","domains":["sample.webflow.io","sample.test"],"publishedBy":{"displayName":"Ada"}}}`, w.site.PlatformSiteID)
}

// millis is t as x-webflow-timestamp writes it.
func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func (w *webhookRig) scans() []store.Scan {
	w.t.Helper()
	scans, err := w.st.ScansOf(context.Background(), w.user.ID, w.site.ID, 100)
	if err != nil {
		w.t.Fatal(err)
	}
	return scans
}

func TestPlatformWebhookBadInput(t *testing.T) {
	valid := `{"siteId":"%s","publishedOn":"2026-11-01T12:00:00Z"}`
	tests := []struct {
		name       string
		body       func(w *webhookRig) string
		sig        func(w *webhookRig, body string) string
		wantStatus int
		wantBody   string
		wantScans  int
	}{
		{"a missing header is 401 Invalid signature", nil, func(*webhookRig, string) string { return "-" }, 401, `{"error":"Invalid signature"}`, 0},
		{"an empty header is 401", nil, func(*webhookRig, string) string { return "" }, 401, `{"error":"Invalid signature"}`, 0},
		{"a signature under the wrong secret is 401", nil, func(_ *webhookRig, b string) string { return sign("other", b) }, 401, `{"error":"Invalid signature"}`, 0},
		{"a tampered body is 401", nil, func(w *webhookRig, b string) string {
			return sign(webhookSecret, strings.Replace(b, "12:00", "12:01", 1))
		}, 401, `{"error":"Invalid signature"}`, 0},
		{"a trailing newline changes the body and is 401", func(w *webhookRig) string { return fmt.Sprintf(valid, w.site.PlatformSiteID) + "\n" },
			func(w *webhookRig, b string) string { return sign(webhookSecret, strings.TrimSuffix(b, "\n")) }, 401, `{"error":"Invalid signature"}`, 0},
		{"upper-case hex is 401", nil, func(_ *webhookRig, b string) string { return strings.ToUpper(sign(webhookSecret, b)) }, 401, `{"error":"Invalid signature"}`, 0},
		{"a sha256= prefix is 401", nil, func(_ *webhookRig, b string) string { return "sha256=" + sign(webhookSecret, b) }, 401, `{"error":"Invalid signature"}`, 0},
		{"a truncated signature is 401", nil, func(_ *webhookRig, b string) string { return sign(webhookSecret, b)[:63] }, 401, `{"error":"Invalid signature"}`, 0},
		{"a signed body that is not JSON is 400", func(*webhookRig) string { return "siteId=plat-1" }, nil, 400, `{"error":"request body must be a JSON object"}`, 0},
		{"a signed JSON array is 400", func(*webhookRig) string { return `[{"siteId":"x"}]` }, nil, 400, `{"error":"request body must be a JSON object"}`, 0},
		{"an unknown platform site id is 200 and does nothing", func(*webhookRig) string { return `{"siteId":"never-connected"}` }, nil, 200, `{"ok":true}`, 0},
		{"a siteId that is not a string is 200 and does nothing", func(*webhookRig) string { return `{"siteId":42}` }, nil, 200, `{"ok":true}`, 0},
		{"no siteId is 200 and does nothing", func(*webhookRig) string { return `{"site":"x"}` }, nil, 200, `{"ok":true}`, 0},
		{"a body over 1 MiB is 413", func(*webhookRig) string { return `{"siteId":"` + strings.Repeat("x", 1<<20) + `"}` }, nil, 413, `{"error":"request body is larger than 1 MiB"}`, 0},
		{"a valid publish enqueues one scan", nil, nil, 200, `{"ok":true}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWebhookRig(t, memory.New(), webhookSecret)
			body := fmt.Sprintf(valid, w.site.PlatformSiteID)
			if tt.body != nil {
				body = tt.body(w)
			}
			sig := sign(webhookSecret, body)
			if tt.sig != nil {
				sig = tt.sig(w, body)
			}
			status, got := w.post(body, sig)
			if status != tt.wantStatus || strings.TrimSpace(got) != tt.wantBody {
				t.Errorf("got %d %s, want %d %s", status, strings.TrimSpace(got), tt.wantStatus, tt.wantBody)
			}
			if n := len(w.scans()); n != tt.wantScans {
				t.Errorf("%d scans, want %d", n, tt.wantScans)
			}
		})
	}
}

// Webflow's own delivery: signed over timestamp + ":" + body, the timestamp within 5 minutes of
// now either way; a refusal is the interface's 401 Invalid signature, a signed body that is not a
// JSON object its 400, and only payload.siteId of a site_publish names the site.
func TestWebflowWebhook(t *testing.T) {
	const invalid = `{"error":"Invalid signature"}`
	type delivery struct{ body, ts, sig string }
	signed := func(body string, at time.Time) delivery {
		ts := millis(at)
		return delivery{body, ts, platformtest.Sign(webhookSecret, ts, []byte(body))}
	}
	tests := []struct {
		name       string
		delivery   func(w *webhookRig) delivery
		wantStatus int
		wantBody   string
		wantScans  int
	}{
		{"a valid delivery enqueues one scan", func(w *webhookRig) delivery { return signed(w.webflowEvent(), w.now) }, 200, `{"ok":true}`, 1},
		{"a timestamp 5 minutes old is accepted", func(w *webhookRig) delivery { return signed(w.webflowEvent(), w.now.Add(-5*time.Minute)) }, 200, `{"ok":true}`, 1},
		{"a timestamp 4 minutes ahead is accepted", func(w *webhookRig) delivery { return signed(w.webflowEvent(), w.now.Add(4*time.Minute)) }, 200, `{"ok":true}`, 1},
		{"a stale timestamp is 401", func(w *webhookRig) delivery {
			return signed(w.webflowEvent(), w.now.Add(-5*time.Minute-time.Millisecond))
		}, 401, invalid, 0},
		{"a timestamp beyond 5 minutes ahead is 401", func(w *webhookRig) delivery {
			return signed(w.webflowEvent(), w.now.Add(5*time.Minute+time.Millisecond))
		}, 401, invalid, 0},
		{"a timestamp in seconds is 401", func(w *webhookRig) delivery {
			ts := strconv.FormatInt(w.now.Unix(), 10)
			return delivery{w.webflowEvent(), ts, platformtest.Sign(webhookSecret, ts, []byte(w.webflowEvent()))}
		}, 401, invalid, 0},
		{"a missing timestamp is 401", func(w *webhookRig) delivery {
			return delivery{w.webflowEvent(), "-", platformtest.Sign(webhookSecret, "", []byte(w.webflowEvent()))}
		}, 401, invalid, 0},
		{"a timestamp that is not a number is 401", func(w *webhookRig) delivery {
			return delivery{w.webflowEvent(), "now", platformtest.Sign(webhookSecret, "now", []byte(w.webflowEvent()))}
		}, 401, invalid, 0},
		{"a timestamp other than the signed one is 401", func(w *webhookRig) delivery {
			d := signed(w.webflowEvent(), w.now)
			d.ts = millis(w.now.Add(time.Millisecond))
			return d
		}, 401, invalid, 0},
		{"a tampered body is 401", func(w *webhookRig) delivery {
			d := signed(w.webflowEvent(), w.now)
			d.body = strings.Replace(d.body, "12:00", "12:01", 1)
			return d
		}, 401, invalid, 0},
		{"a signature under the wrong secret is 401", func(w *webhookRig) delivery {
			ts := millis(w.now)
			return delivery{w.webflowEvent(), ts, platformtest.Sign("other", ts, []byte(w.webflowEvent()))}
		}, 401, invalid, 0},
		{"the interface's signature of the body alone is 401", func(w *webhookRig) delivery {
			return delivery{w.webflowEvent(), millis(w.now), sign(webhookSecret, w.webflowEvent())}
		}, 401, invalid, 0},
		{"upper-case hex is 401", func(w *webhookRig) delivery {
			d := signed(w.webflowEvent(), w.now)
			d.sig = strings.ToUpper(d.sig)
			return d
		}, 401, invalid, 0},
		{"an empty signature is 401", func(w *webhookRig) delivery { return delivery{w.webflowEvent(), millis(w.now), ""} }, 401, invalid, 0},
		{"a signed body that is not JSON is 400", func(w *webhookRig) delivery { return signed("siteId=plat-1", w.now) }, 400, `{"error":"request body must be a JSON object"}`, 0},
		{"a signed JSON array is 400", func(w *webhookRig) delivery { return signed(`[{"payload":{"siteId":"x"}}]`, w.now) }, 400, `{"error":"request body must be a JSON object"}`, 0},
		{"an unknown site is 200 and does nothing", func(w *webhookRig) delivery {
			return signed(`{"triggerType":"site_publish","payload":{"siteId":"never-connected"}}`, w.now)
		}, 200, `{"ok":true}`, 0},
		{"another trigger naming the site is 200 and does nothing", func(w *webhookRig) delivery {
			return signed(strings.Replace(w.webflowEvent(), "site_publish", "form_submission", 1), w.now)
		}, 200, `{"ok":true}`, 0},
		{"the interface's top-level siteId under Webflow's signature is 200 and does nothing", func(w *webhookRig) delivery {
			return signed(fmt.Sprintf(`{"triggerType":"site_publish","siteId":%q}`, w.site.PlatformSiteID), w.now)
		}, 200, `{"ok":true}`, 0},
		{"a payload that is not an object is 200 and does nothing", func(w *webhookRig) delivery {
			return signed(`{"triggerType":"site_publish","payload":"x"}`, w.now)
		}, 200, `{"ok":true}`, 0},
	}
	for _, b := range storetest.Backends(t) {
		for _, tt := range tests {
			t.Run(b.Name+" "+tt.name, func(t *testing.T) {
				w := newWebhookRig(t, b.Open(t), webhookSecret)
				d := tt.delivery(w)
				status, got := w.postWebflow(d.body, d.ts, d.sig)
				if status != tt.wantStatus || strings.TrimSpace(got) != tt.wantBody {
					t.Errorf("got %d %s, want %d %s", status, strings.TrimSpace(got), tt.wantStatus, tt.wantBody)
				}
				if n := len(w.scans()); n != tt.wantScans {
					t.Errorf("%d scans, want %d", n, tt.wantScans)
				}
				if strings.Contains(w.logs.String(), webhookSecret) {
					t.Errorf("the secret reached the log:\n%s", w.logs.String())
				}
			})
		}
	}
}

// x-webflow-signature decides how a request is verified: with it, a valid x-platform-signature
// does not stand in for a bad Webflow signature.
func TestWebflowSignatureTakesPrecedence(t *testing.T) {
	w := newWebhookRig(t, memory.New(), webhookSecret)
	body := fmt.Sprintf(`{"siteId":%q,"triggerType":"site_publish","payload":{"siteId":%q}}`, w.site.PlatformSiteID, w.site.PlatformSiteID)
	req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/api/webhooks/platform", strings.NewReader(body))
	req.Header.Set("x-platform-signature", sign(webhookSecret, body))
	req.Header.Set("x-webflow-timestamp", millis(w.now))
	req.Header.Set("x-webflow-signature", "0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := readBody(t, resp); resp.StatusCode != 401 || strings.TrimSpace(got) != `{"error":"Invalid signature"}` {
		t.Errorf("got %d %s, want 401 Invalid signature", resp.StatusCode, got)
	}
	if n := len(w.scans()); n != 0 {
		t.Errorf("%d scans, want 0", n)
	}
}

// A Webflow delivery has one effect: the same request again, and Webflow's retry of it (the same
// body under a later timestamp and so a new signature) within 24 hours, are acknowledged and
// ignored by the one replay guard, even once the first scan has finished.
func TestWebflowWebhookReplay(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			w := newWebhookRig(t, b.Open(t), webhookSecret)
			body := w.webflowEvent()
			deliver := func() int {
				t.Helper()
				ts := millis(w.now)
				status, _ := w.postWebflow(body, ts, platformtest.Sign(webhookSecret, ts, []byte(body)))
				return status
			}
			deliver()
			j, err := w.st.ClaimJob(ctx, store.KindScan, "t", w.now.Add(time.Minute), 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.st.FailScan(ctx, j.Lease(), "test", w.now); err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				after time.Duration
				scans int
			}{
				{0, 1},                // the same request again
				{10 * time.Minute, 1}, // Webflow's retry: same body, new timestamp and signature
				{24 * time.Hour, 2},   // a day later the body is a new publish
			} {
				w.now = w.now.Add(step.after)
				if status := deliver(); status != 200 {
					t.Fatalf("delivery %s later: %d, want 200", step.after, status)
				}
				if n := len(w.scans()); n != step.scans {
					t.Fatalf("%d scans after a delivery %s later, want %d", n, step.after, step.scans)
				}
			}
		})
	}
}

func TestPlatformWebhookWithoutSecretIs503(t *testing.T) {
	w := newWebhookRig(t, memory.New(), "")
	body := fmt.Sprintf(`{"siteId":%q}`, w.site.PlatformSiteID)
	status, got := w.post(body, sign("", body))
	if status != http.StatusServiceUnavailable || !strings.Contains(got, "PLATFORM_CLIENT_SECRET") {
		t.Errorf("got %d %s, want 503 naming PLATFORM_CLIENT_SECRET", status, got)
	}
	if n := len(w.scans()); n != 0 {
		t.Errorf("%d scans, want 0", n)
	}
}

// The demo's printed secret signs publishes of the demo site even when PLATFORM_CLIENT_SECRET is
// configured (the Webflow offline flow, issue 24), and nothing else then; alone, it signs all.
func TestPlatformWebhookDemoSecretSignsOnlyTheDemoSite(t *testing.T) {
	const demoSecret = "whsec_demo"
	demoSite := func(d *Deps) { d.DemoWebhookSecret, d.DemoPlatformID = demoSecret, "demo-site" }
	for _, tt := range []struct {
		name, platformSecret, platformID string
		want                             int
	}{
		{"with a configured secret, the demo site is published", webhookSecret, "demo-site", 200},
		{"with a configured secret, another site is 401", webhookSecret, "other-site", 401},
		{"without one, the demo secret is the webhook's secret", "", "other-site", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWebhookRig(t, memory.New(), tt.platformSecret, demoSite)
			body := fmt.Sprintf(`{"siteId":%q,"_id":"evt-1"}`, tt.platformID)
			if status, got := w.post(body, sign(demoSecret, body)); status != tt.want {
				t.Errorf("got %d %s, want %d", status, got, tt.want)
			}
		})
	}
}

func TestPlatformWebhookEnqueues(t *testing.T) {
	ctx := context.Background()
	w := newWebhookRig(t, memory.New(), webhookSecret)
	if status, body := w.publish(""); status != 200 || strings.TrimSpace(body) != `{"ok":true}` {
		t.Fatalf("publish: %d %s", status, body)
	}
	scans := w.scans()
	if len(scans) != 1 {
		t.Fatalf("%d scans, want 1", len(scans))
	}
	sc := scans[0]
	if sc.Status != store.StatusQueued || sc.Strategy != store.StrategyBoth || sc.Trigger != store.TriggerWebhook {
		t.Errorf("scan = %s %s %s, want queued both webhook", sc.Status, sc.Strategy, sc.Trigger)
	}
	site, _ := w.st.Site(ctx, w.user.ID, w.site.ID)
	if site.LastPublished == nil || !site.LastPublished.Equal(w.now) {
		t.Errorf("lastPublished = %v, want %v", site.LastPublished, w.now)
	}
	// The jitter delays the job: not runnable before now+3s, runnable at it.
	if _, err := w.st.ClaimJob(ctx, store.KindScan, "t", w.now.Add(w.jitter-time.Millisecond), 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("claim before the jitter: %v, want not found", err)
	}
	if j, err := w.st.ClaimJob(ctx, store.KindScan, "t", w.now.Add(w.jitter), 0); err != nil || j.ScanID != sc.ID {
		t.Errorf("claim at the jitter: %v %v", j.ScanID, err)
	}

	// The same signed body again: acknowledged, ignored.
	if status, _ := w.publish(""); status != 200 {
		t.Errorf("replay: %d, want 200", status)
	}
	// A second, different publish while the scan is in flight: 200, logged, no new scan.
	if status, _ := w.publish(`,"n":2`); status != 200 {
		t.Errorf("second publish: %d, want 200", status)
	}
	if n := len(w.scans()); n != 1 {
		t.Errorf("%d scans after a replay and a second publish, want 1", n)
	}
	if !strings.Contains(w.logs.String(), "SCAN_ALREADY_ACTIVE") {
		t.Errorf("SCAN_ALREADY_ACTIVE not logged:\n%s", w.logs.String())
	}
}

// A delivery has one effect for 24 hours, whether it comes back as the same signed body or as
// the same event _id re-serialized; the guard is in the store, shared by every replica.
func TestPlatformWebhookReplayWithin24Hours(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			w := newWebhookRig(t, b.Open(t), webhookSecret)
			// finish ends the site's in-flight scan, so only the replay guard can stop a new one.
			finish := func() {
				t.Helper()
				j, err := w.st.ClaimJob(ctx, store.KindScan, "t", w.now.Add(time.Minute), 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.st.FailScan(ctx, j.Lease(), "test", w.now); err != nil {
					t.Fatal(err)
				}
			}
			body := w.event("")
			reserialized := strings.Replace(body, `{"siteId"`, `{ "siteId"`, 1)
			w.publish("")
			finish()
			for _, step := range []struct {
				after time.Duration
				body  string
				scans int
			}{
				{11 * time.Minute, body, 1},
				{23 * time.Hour, reserialized, 1},
				{time.Hour - 11*time.Minute + time.Second, body, 2}, // 24 h after the first delivery
			} {
				w.now = w.now.Add(step.after)
				if status, _ := w.post(step.body, sign(webhookSecret, step.body)); status != 200 {
					t.Fatalf("replay: %d, want 200", status)
				}
				if n := len(w.scans()); n != step.scans {
					t.Fatalf("%d scans after a replay %s later, want %d", n, step.after, step.scans)
				}
			}
		})
	}
}

func TestPlatformWebhookJitterIsWithinFiveSeconds(t *testing.T) {
	for range 1000 {
		if j := randomJitter(); j < 0 || j > 5*time.Second {
			t.Fatalf("jitter %s outside 0-5 s", j)
		}
	}
}

// 50 publishes at once, distinct or identical: all answered 200, exactly one scan in flight.
func TestPlatformWebhookConcurrentPublishes(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		for _, identical := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s identical=%v", b.Name, identical), func(t *testing.T) {
				w := newWebhookRig(t, b.Open(t), webhookSecret)
				var wg sync.WaitGroup
				statuses := make([]int, 50)
				for i := range 50 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						extra := fmt.Sprintf(`,"n":%d`, i)
						if identical {
							extra = ""
						}
						statuses[i], _ = w.publish(extra)
					}()
				}
				wg.Wait()
				for i, s := range statuses {
					if s != 200 {
						t.Errorf("publish %d: %d, want 200", i, s)
					}
				}
				if n := len(w.scans()); n != 1 {
					t.Errorf("%d scans, want exactly 1", n)
				}
			})
		}
	}
}

// The end-to-end path: a signed publish, the pool auditing against a PSI serving the real
// fixtures, the scan going queued -> running -> complete with one result per page and strategy.
func TestPublishToCompleteScan(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			w := newWebhookRig(t, st, webhookSecret)
			w.jitter = 0
			fake := scantest.NewPSI(t, "../testdata/psi")
			release := fake.Hold()
			if status, _ := w.publish(""); status != 200 {
				t.Fatalf("publish: %d", status)
			}
			scans := w.scans()
			if len(scans) != 1 || scans[0].Status != store.StatusQueued {
				t.Fatalf("after publish: %+v, want one queued scan", scans)
			}
			id := scans[0].ID
			pool := scanner.NewPool(scanner.PoolConfig{Store: st, Auditor: psi.New(psi.Config{Endpoint: fake.Endpoint(), Key: "k"}),
				Poll: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(w.logs, nil))})
			pool.Start()
			defer pool.Stop(ctx)
			seen := map[store.ScanStatus]bool{scans[0].Status: true}
			storetest.Eventually(func() bool {
				sc, err := st.Scan(ctx, w.user.ID, id)
				if err != nil {
					t.Fatal(err)
				}
				seen[sc.Status] = true
				if sc.Status == store.StatusRunning {
					release()
				}
				return sc.Status == store.StatusComplete || sc.Status == store.StatusFailed
			})
			if !seen[store.StatusQueued] || !seen[store.StatusRunning] || !seen[store.StatusComplete] {
				t.Fatalf("statuses seen %v, want queued, running and complete; logs:\n%s", seen, w.logs.String())
			}
			results, err := st.PageResults(ctx, w.user.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 10 {
				t.Fatalf("%d results, want 10 (5 pages x 2 strategies)", len(results))
			}
			count := map[string]int{}
			for _, r := range results {
				count[r.PagePath+" "+string(r.Strategy)]++
			}
			for _, p := range w.site.Pages {
				for _, s := range []string{"mobile", "desktop"} {
					if count[p+" "+s] != 1 {
						t.Errorf("%s %s has %d results, want 1", p, s, count[p+" "+s])
					}
				}
			}
			sc, _ := st.Scan(ctx, w.user.ID, id)
			if sc.Trigger != store.TriggerWebhook || sc.Scores.Health == nil {
				t.Errorf("scan trigger %s, health %v", sc.Trigger, sc.Scores.Health)
			}
		})
	}
}

// The webhook never panics or answers outside its statuses, whatever the body and signature.
func FuzzPlatformWebhook(f *testing.F) {
	st := memory.New()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	h, err := NewHandler(withServers(st, Deps{BaseURL: "http://sitepulse.test", PlatformSecret: webhookSecret, Now: func() time.Time { return now },
		WebhookJitter: func() time.Duration { return 0 }}))
	if err != nil {
		f.Fatal(err)
	}
	for _, body := range []string{`{"siteId":"x"}`, `[]`, `null`, `{"siteId":null}`, "\xff\xfe", `{"siteId":"` + strings.Repeat("a", 300) + `"}`, ``,
		`{"siteId":"a","siteId":"b"}`, `{"siteId":"\u0000"}`, `{"siteId":7}`, `{"siteId":"x"}` + strings.Repeat(" ", 2<<20),
		`{"siteId":"x","pages":[` + strings.Repeat(`"/",`, 1000) + `"/"]}`} {
		f.Add(body, sign(webhookSecret, body))
		f.Add(body, "sha256="+sign(webhookSecret, body))
	}
	f.Add(`{"triggerType":"site_publish","payload":{"siteId":"x"}}`, "1761998400000")
	f.Add(`{"triggerType":"site_publish","payload":{"siteId":"x"}}`, "-9223372036854775808")
	f.Fuzz(func(t *testing.T, body, sig string) {
		// Webflow's delivery: the fuzzed signature, the right one, and the fuzzed string as the
		// timestamp of a right signature (whatever it parses to, only 5 minutes around now pass).
		ts := strconv.FormatInt(now.UnixMilli(), 10)
		for _, d := range [][2]string{{ts, sig}, {ts, platformtest.Sign(webhookSecret, ts, []byte(body))}, {sig, platformtest.Sign(webhookSecret, sig, []byte(body))}} {
			req := httptest.NewRequest(http.MethodPost, "/api/webhooks/platform", strings.NewReader(body))
			req.Header.Set("x-webflow-timestamp", d[0])
			req.Header.Set("x-webflow-signature", d[1])
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case 200, 400, 401, 413:
			default:
				t.Fatalf("status %d for body %q timestamp %q sig %q: %s", rec.Code, body, d[0], d[1], rec.Body)
			}
			if len(body) <= maxBody && d[1] != platformtest.Sign(webhookSecret, ts, []byte(body)) && d[0] == ts && rec.Code != 401 {
				t.Fatalf("a wrong Webflow signature got %d", rec.Code)
			}
		}
		for _, s := range []string{sig, sign(webhookSecret, body)} {
			req := httptest.NewRequest(http.MethodPost, "/api/webhooks/platform", strings.NewReader(body))
			req.Header.Set("x-platform-signature", s)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case 200, 400, 401, 413:
			default:
				t.Fatalf("status %d for body %q sig %q: %s", rec.Code, body, s, rec.Body)
			}
			// The 1 MiB cap comes first: an oversized body is 413 whatever its signature.
			if len(body) > maxBody {
				if rec.Code != 413 {
					t.Fatalf("a body of %d bytes got %d", len(body), rec.Code)
				}
			} else if s != sign(webhookSecret, body) && rec.Code != 401 {
				t.Fatalf("a wrong signature got %d", rec.Code)
			}
		}
	})
}

// flakyEnqueue is a store whose next EnqueueScan fails as a database restart would.
type flakyEnqueue struct {
	store.Store
	fail atomic.Bool
}

func (f *flakyEnqueue) EnqueueScan(ctx context.Context, s store.Scan, queue string, runAt time.Time) error {
	if f.fail.Swap(false) {
		return fmt.Errorf("enqueue: %w", store.ErrUnavailable)
	}
	return f.Store.EnqueueScan(ctx, s, queue, runAt)
}

// A delivery whose effect failed (503) is not remembered: the platform's retry of the same
// delivery is not a replay, and scans the publish.
func TestPlatformWebhookRetryAfterFailureScans(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := &flakyEnqueue{Store: b.Open(t)}
			w := newWebhookRig(t, st, webhookSecret)
			st.fail.Store(true)
			if status, body := w.publish(""); status != http.StatusServiceUnavailable {
				t.Fatalf("first delivery: %d %s, want 503", status, body)
			}
			if n := len(w.scans()); n != 0 {
				t.Fatalf("%d scans after a failed delivery", n)
			}
			if status, body := w.publish(""); status != http.StatusOK {
				t.Fatalf("retry: %d %s", status, body)
			}
			if n := len(w.scans()); n != 1 {
				t.Errorf("%d scans after the retry, want 1", n)
			}
		})
	}
}

// A publish while the site's scan runs is audited (issue 43: it was answered {"ok":true} and
// dropped as SCAN_ALREADY_ACTIVE): the first queues one follow-up scan, the next joins it, and
// once the running scan ends the follow-up scan runs and completes; two scans in all.
func TestPublishDuringScanIsFollowedUp(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			w := newWebhookRig(t, st, webhookSecret)
			w.jitter = 0
			fake := scantest.NewPSI(t, "../testdata/psi")
			release := fake.Hold()
			if status, _ := w.publish(""); status != 200 {
				t.Fatalf("publish: %d", status)
			}
			first := w.scans()[0].ID
			log := slog.New(slog.NewTextHandler(w.logs, nil))
			newPool := func(kinds ...scanner.KindWorker) {
				pool := scanner.NewPool(scanner.PoolConfig{Store: st, Auditor: psi.New(psi.Config{Endpoint: fake.Endpoint(), Key: "k"}),
					Poll: 10 * time.Millisecond, Log: log, Kinds: kinds})
				pool.Start()
				t.Cleanup(func() { release(); pool.Stop(ctx) }) // the pool waits for the held audits
			}
			newPool()
			if !storetest.Eventually(func() bool {
				sc, err := st.Scan(ctx, w.user.ID, first)
				return err == nil && sc.Status == store.StatusRunning
			}) {
				t.Fatal("the first scan never ran")
			}
			for i, want := range []string{`{"followUp":"queued","ok":true}`, `{"followUp":"joined","ok":true}`} {
				if status, body := w.publish(fmt.Sprintf(`,"n":%d`, i)); status != 200 || strings.TrimSpace(body) != want {
					t.Fatalf("publish %d during the scan: %d %s, want 200 %s", i+2, status, body, want)
				}
			}
			// The follow-ups' worker (main registers it with the others) from here on, so the
			// publishes above met the follow-up waiting.
			newPool(scanner.Work(1, (&scanner.FollowUps{Store: st, Now: time.Now, Log: log, Wait: 20 * time.Millisecond}).Work))
			release()
			var scans []store.Scan
			if !storetest.Eventually(func() bool {
				scans = w.scans()
				return len(scans) == 2 && scans[0].Status == store.StatusComplete && scans[1].Status == store.StatusComplete
			}) {
				t.Fatalf("scans %+v, want the first and its follow-up complete; logs:\n%s", scans, w.logs.String())
			}
			if scans[0].Trigger != store.TriggerWebhook || !strings.Contains(w.logs.String(), "a follow-up scan is queued to audit this publish") {
				t.Errorf("follow-up trigger %s; logs:\n%s", scans[0].Trigger, w.logs.String())
			}
		})
	}
}
