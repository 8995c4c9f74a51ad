package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/platform"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// receivers stand in for Slack, Teams, Discord and a webhook endpoint on one local server, by
// path; /flaky answers 503 twice then 200, /gone 410.
type receivers struct {
	*httptest.Server
	mu     sync.Mutex
	got    map[string][][]byte
	sigs   map[string][]string
	flakes int
}

func newReceivers(t *testing.T) *receivers {
	rc := &receivers{got: map[string][][]byte{}, sigs: map[string][]string{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.got[r.URL.Path] = append(rc.got[r.URL.Path], b)
		rc.sigs[r.URL.Path] = append(rc.sigs[r.URL.Path], r.Header.Get("X-SitePulse-Signature"))
		switch {
		case r.URL.Path == "/gone":
			w.WriteHeader(http.StatusGone)
		case r.URL.Path == "/flaky" && rc.flakes < 2:
			rc.flakes++
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receivers) count(path string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got[path])
}

// alertRig is a store with a user, a site and a channel per receiver path, and a Deliverer whose
// guard lets through the receivers only.
type alertRig struct {
	st       store.Store
	user     store.User
	site     store.Site
	rc       *receivers
	dl       *Deliverer
	at       time.Time
	secret   string
	channels []store.Channel
}

func newAlertRig(t *testing.T, st store.Store) *alertRig {
	ctx := context.Background()
	r := &alertRig{st: st, rc: newReceivers(t), at: now}
	r.user = store.User{ID: store.NewID(), Email: "team@example.com", PasswordHash: "x", CreatedAt: now}
	if err := st.CreateUser(ctx, r.user); err != nil {
		t.Fatal(err)
	}
	r.site = store.Site{ID: store.NewID(), UserID: r.user.ID, WorkspaceID: r.user.ID, Name: "Shop", Domain: "shop.example", CreatedAt: now}
	if err := st.CreateSite(ctx, r.site); err != nil {
		t.Fatal(err)
	}
	keys := platform.RandomKeys()
	r.secret = "whsec_e2e"
	all := []string{store.EventRegressionConfirmed, store.EventBudgetBroken, store.EventBudgetRecovered, store.EventScanFailed}
	for _, c := range []struct{ kind, path string }{{KindSlack, "/slack"}, {KindTeams, "/teams"}, {KindDiscord, "/discord"}, {KindWebhook, "/webhook"}} {
		url, _ := keys.SealFor(platform.PurposeChannelURL, r.rc.URL+c.path, r.user.ID)
		ch := store.Channel{ID: store.NewID(), WorkspaceID: r.user.ID, Kind: c.kind, Name: c.kind, URLSealed: url, Events: all, CreatedAt: now}
		if c.kind == KindWebhook {
			ch.SecretSealed, _ = keys.SealFor(platform.PurposeChannelSecret, r.secret, r.user.ID)
		}
		if err := st.CreateChannel(ctx, r.user.ID, ch); err != nil {
			t.Fatal(err)
		}
		r.channels = append(r.channels, ch)
	}
	guard := netguard.Guard{Exempt: netip.MustParseAddrPort(strings.TrimPrefix(r.rc.URL, "http://"))}
	r.dl = &Deliverer{Store: st, Keys: keys, Client: guard.Client(), Now: func() time.Time { return r.at }}
	return r
}

// run delivers every dispatch of a finished scan to the end, as the delivery job would, moving
// the clock to each retry instead of waiting for it.
func (r *alertRig) run(t *testing.T, o Outcome) []Event {
	ctx := context.Background()
	events := Events(o, r.at, func() string { return "evt_" + store.NewID() })
	channels, err := r.st.WorkspaceChannels(ctx, r.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Route(r.user.ID, events, channels) {
		first := r.at
		for attempt := 1; ; attempt++ {
			next, err := r.dl.Attempt(ctx, d, attempt, first)
			if err != nil {
				t.Fatal(err)
			}
			if next == nil {
				break
			}
			r.at = *next
		}
	}
	return events
}

func (r *alertRig) outcome(previous, latest []store.PageResult, violations []analysis.Violation, wasBroken bool) Outcome {
	o := outcome(previous, latest, violations, wasBroken)
	o.Site = r.site
	return o
}

func TestAlertsEndToEnd(t *testing.T) {
	before := []store.PageResult{result("/", "mobile", 92, 1200), result("/pricing", "mobile", 90, 1500)}
	worse := []store.PageResult{result("/", "mobile", 70, 1300), result("/pricing", "mobile", 40, 5200)}
	broken := []analysis.Violation{{Metric: "performance", Threshold: 80, Actual: 55, Operator: store.OpMin}}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Run("a confirmed regression is one message per channel, each in its shape", func(t *testing.T) {
				r := newAlertRig(t, b.Open(t))
				r.run(t, r.outcome(before, worse, nil, false))
				for path, want := range map[string]string{"/slack": `"blocks"`, "/teams": `"application/vnd.microsoft.card.adaptive"`, "/discord": `"embeds"`, "/webhook": `"type":"regression.confirmed"`} {
					if n := r.rc.count(path); n != 1 {
						t.Fatalf("%s got %d messages, want 1", path, n)
					}
					body := string(r.rc.got[path][0])
					if !strings.Contains(body, want) || !strings.Contains(body, "confirmed regressions on Shop") && path != "/webhook" {
						t.Errorf("%s got %s", path, body)
					}
				}
				if err := Verify([]byte(r.secret), r.rc.sigs["/webhook"][0], r.rc.got["/webhook"][0], r.at, 5*time.Minute); err != nil {
					t.Errorf("webhook signature: %v", err)
				}
				ds, _ := r.st.DeliveriesOf(context.Background(), r.user.ID, r.user.ID, r.channels[0].ID, 50)
				if len(ds) != 1 || ds[0].State != store.DeliveryDelivered || ds[0].LastStatus != 200 {
					t.Errorf("slack deliveries = %+v", ds)
				}
			})
			t.Run("a noisy page the re-audit cleared sends nothing", func(t *testing.T) {
				r := newAlertRig(t, b.Open(t))
				r.run(t, r.outcome(before, []store.PageResult{result("/", "mobile", 90, 1250), result("/pricing", "mobile", 89, 1500)}, nil, false))
				for _, p := range []string{"/slack", "/teams", "/discord", "/webhook"} {
					if n := r.rc.count(p); n != 0 {
						t.Errorf("%s got %d messages, want none", p, n)
					}
				}
			})
			t.Run("budgets broken three scans in a row send one budget.broken, then one budget.recovered", func(t *testing.T) {
				r := newAlertRig(t, b.Open(t))
				was := false
				for _, v := range [][]analysis.Violation{broken, broken, broken, nil, nil} {
					o := r.outcome(before, before, v, was)
					r.run(t, o)
					was = o.BudgetsBroken()
				}
				var types []string
				for _, body := range r.rc.got["/webhook"] {
					var e Event
					json.Unmarshal(body, &e)
					types = append(types, e.Type)
				}
				if got := strings.Join(types, ","); got != "budget.broken,budget.recovered" || r.rc.count("/slack") != 2 {
					t.Errorf("webhook got %s and slack %d messages; want budget.broken,budget.recovered and 2", got, r.rc.count("/slack"))
				}
			})
			t.Run("503 twice then 200 arrives on the third attempt; 410 stops; 127.0.0.1 outside the guard is refused", func(t *testing.T) {
				st := b.Open(t)
				r := newAlertRig(t, st)
				other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { t.Error("the guard let a delivery reach 127.0.0.1") }))
				defer other.Close()
				keys := r.dl.Keys.(*platform.Keys)
				ctx := context.Background()
				for _, c := range r.channels {
					st.DeleteChannel(ctx, r.user.ID, r.user.ID, c.ID)
				}
				ids := map[string]string{}
				for _, u := range []string{r.rc.URL + "/flaky", r.rc.URL + "/gone", other.URL + "/hook"} {
					sealed, _ := keys.SealFor(platform.PurposeChannelURL, u, r.user.ID)
					ch := store.Channel{ID: store.NewID(), WorkspaceID: r.user.ID, Kind: KindSlack, Name: "c", URLSealed: sealed, Events: []string{store.EventScanFailed}, CreatedAt: now}
					if err := st.CreateChannel(ctx, r.user.ID, ch); err != nil {
						t.Fatal(err)
					}
					ids[u[strings.LastIndex(u, "/"):]] = ch.ID
				}
				o := r.outcome(before, nil, nil, false)
				o.Scan.Status, o.Scan.Error = store.StatusFailed, "PSI quota exhausted"
				r.run(t, o)
				for path, want := range map[string]struct {
					state    string
					attempts int
				}{"/flaky": {store.DeliveryDelivered, 3}, "/gone": {store.DeliveryFailed, 1}, "/hook": {store.DeliveryFailed, 1}} {
					ds, _ := st.DeliveriesOf(ctx, r.user.ID, r.user.ID, ids[path], 50)
					if len(ds) != 1 || ds[0].State != want.state || ds[0].Attempts != want.attempts {
						t.Errorf("%s deliveries = %+v, want %s after %d attempts", path, ds, want.state, want.attempts)
					}
				}
				if c, _ := st.Channel(ctx, r.user.ID, ids["/gone"]); c.FailingSince == nil {
					t.Error("the channel whose receiver is gone is not marked failing")
				}
				if c, _ := st.Channel(ctx, r.user.ID, ids["/flaky"]); c.FailingSince != nil {
					t.Error("the channel that recovered is marked failing")
				}
				if r.rc.count("/flaky") != 3 || r.rc.count("/gone") != 1 {
					t.Errorf("flaky got %d, gone %d; want 3 and 1", r.rc.count("/flaky"), r.rc.count("/gone"))
				}
			})
		})
	}
}
