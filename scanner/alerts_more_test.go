package scanner

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// alertPool is a pool on a stepped clock that runs the alert jobs only: planning and delivery.
func (r *rig) alertPool(keys *platform.Keys, client *http.Client, clock *scantest.Clock, mail notify.MailFunc) *Pool {
	deliverer := &notify.Deliverer{Store: r.st, Keys: keys, Client: client, Mail: mail, BaseURL: "http://sitepulse.test",
		Log: slog.New(slog.NewTextHandler(r.logs, nil)), Now: clock.Now}
	alerts := &notify.Alerts{Store: r.st, Planner: &notify.Planner{Store: r.st, BaseURL: "http://sitepulse.test", Now: clock.Now}}
	return NewPool(PoolConfig{Store: r.st, Log: slog.New(slog.NewTextHandler(r.logs, nil)), Now: clock.Now, Lease: 2 * time.Second,
		Heartbeat: 50 * time.Millisecond, Kinds: []KindWorker{Work(1, alerts.Work), Work(2, deliverer.Work)}})
}

// planOne stores one pending delivery of a scan.failed event to channel c, and its job, at now.
func (r *rig) planOne(c store.Channel, eventID string, now time.Time) {
	r.t.Helper()
	e := notify.Event{ID: eventID, Type: store.EventScanFailed, CreatedAt: now, Site: notify.EventSite{ID: r.site.ID, Name: r.site.Name, Domain: r.site.Domain},
		Data: notify.EventDetail{Reason: "no page could be audited"}}
	d := store.Delivery{ID: store.NewID(), ChannelID: c.ID, EventID: e.ID, EventType: e.Type, State: store.DeliveryPending, CreatedAt: now}
	if n, err := r.st.PlanDeliveries(context.Background(), r.user.ID, []store.Delivery{d},
		[]store.JobArgs{notify.Dispatch{WorkspaceID: r.user.ID, ChannelID: c.ID, Event: e}}, now); err != nil || n != 1 {
		r.t.Fatalf("planned %d, %v", n, err)
	}
}

func eachBackend(t *testing.T, fn func(t *testing.T, st store.Store)) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.Open(t))
		})
	}
}

// A noisy page whose regression the re-audits do not confirm sends nothing; the next scan, where
// a page regresses on every run, sends one regression.confirmed naming that page alone.
func TestAlertsNoisyPageSendsNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		r := newRig(t, st)
		keys := platform.RandomKeys()
		rc := newReceivers(t, nil)
		r.addChannel(keys, store.ChannelSlack, rc.srv.URL+"/slack", store.EventRegressionConfirmed)
		fake := scantest.NewInProcess(beforeDir)
		scan := func() store.Scan {
			p := r.pool(func(c *PoolConfig) {
				c.Auditor, c.ConfirmRuns, c.Then = psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client()}), 2, notify.AfterScan
			})
			sc := r.wait(r.enqueue(r.site).ID)
			p.Stop(context.Background())
			return sc
		}
		clock := scantest.NewClock(time.Now().Add(time.Second))
		ap := r.alertPool(keys, rc.guard().Client(), clock, nil)
		// The scans run on the wall clock: the alert pool's clock catches up before it works.
		alertsOf := func() int {
			clock.Set(time.Now().Add(time.Second))
			n := drain(t, ap, notify.KindAlerts)
			drain(t, ap, notify.KindDelivery)
			return n
		}
		scan()
		alertsOf()
		// Home on mobile regresses on its first run only: the two re-audits clear it.
		fake.Sequence("/", "mobile", afterDir, beforeDir)
		if sc := scan(); sc.Status != store.StatusComplete {
			t.Fatalf("noisy scan %s: %s", sc.Status, sc.Error)
		}
		if n := alertsOf(); n != 1 {
			t.Fatalf("%d alerts jobs ran for the noisy scan, want 1", n)
		}
		if n := rc.hits("/slack"); n != 0 {
			t.Fatalf("a regression the re-audits did not confirm sent %d messages, want 0:\n%v", n, rc.bodies["/slack"])
		}
		// Pricing on mobile regresses on every run: confirmed.
		fake.Sequence("/pricing", "mobile", afterDir)
		if sc := scan(); sc.Status != store.StatusComplete {
			t.Fatalf("regressed scan %s: %s", sc.Status, sc.Error)
		}
		if n := alertsOf(); n != 1 {
			t.Fatalf("%d alerts jobs ran for the regressed scan, want 1", n)
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if b := rc.bodies["/slack"]; len(b) != 1 || !strings.Contains(b[0], "/pricing") || strings.Contains(b[0], "/ (mobile)") {
			t.Errorf("after a confirmed regression the channel got %v, want one message naming /pricing", b)
		}
	})
}

// A receiver answering 429 with Retry-After is tried again when it asked, not at the backoff.
func TestAlertsHonourRetryAfter(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		r := newRig(t, st)
		keys := platform.RandomKeys()
		rc := newReceivers(t, map[string][]int{"/busy": {429, 200}})
		rc.headers = map[string]http.Header{"/busy": {"Retry-After": {"120"}}}
		c := r.addChannel(keys, store.ChannelDiscord, rc.srv.URL+"/busy", store.EventScanFailed)
		clock := scantest.NewClock(time.Now().Add(time.Second))
		ap := r.alertPool(keys, rc.guard().Client(), clock, nil)
		r.planOne(c, "evt_busy", clock.Now())
		start := clock.Now()
		if n := drain(t, ap, notify.KindDelivery); n != 1 || rc.hits("/busy") != 1 {
			t.Fatalf("first round: %d jobs, %d requests", n, rc.hits("/busy"))
		}
		for clock.Now().Sub(start) < 5*time.Minute && rc.hits("/busy") < 2 {
			clock.Advance(5 * time.Second)
			drain(t, ap, notify.KindDelivery)
		}
		if took := clock.Now().Sub(start); rc.hits("/busy") != 2 || took != 120*time.Second {
			t.Errorf("second attempt after %v (%d requests), want after the 120 s Retry-After asked for", took, rc.hits("/busy"))
		}
		ds, _ := st.DeliveriesOf(context.Background(), r.user.ID, r.user.ID, c.ID, 5)
		if len(ds) != 1 || ds[0].State != store.DeliveryDelivered || ds[0].Attempts != 2 {
			t.Errorf("deliveries = %+v, want one delivered after 2 attempts", ds)
		}
	})
}

// A channel whose URL is on loopback or the metadata address, written to the store directly (as
// if the check at save were bypassed, or the name resolved elsewhere since), is refused by the
// outbound guard at delivery: nothing is sent, the delivery fails at once, the channel is failing.
func TestAlertsGuardRefusesAtDelivery(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		r := newRig(t, st)
		keys := platform.RandomKeys()
		rc := newReceivers(t, nil) // exempted: the control, it receives
		var hits int
		var mu sync.Mutex
		private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			hits++
			mu.Unlock()
		}))
		t.Cleanup(private.Close)
		loop := r.addChannel(keys, store.ChannelSlack, private.URL+"/hook", store.EventScanFailed)
		meta := r.addChannel(keys, store.ChannelWebhook, "http://169.254.169.254/latest/meta-data/", store.EventScanFailed)
		ok := r.addChannel(keys, store.ChannelSlack, rc.srv.URL+"/ok", store.EventScanFailed)
		clock := scantest.NewClock(time.Now().Add(time.Second))
		ap := r.alertPool(keys, rc.guard().Client(), clock, nil)
		for _, c := range []store.Channel{loop, meta, ok} {
			r.planOne(c, "evt_"+c.ID, clock.Now())
		}
		if n := drain(t, ap, notify.KindDelivery); n != 3 {
			t.Fatalf("%d delivery jobs ran, want 3", n)
		}
		clock.Advance(48 * time.Hour)
		if n := drain(t, ap, notify.KindDelivery); n != 0 {
			t.Errorf("%d refused deliveries were retried, want 0", n)
		}
		mu.Lock()
		if hits != 0 {
			t.Errorf("the loopback receiver got %d requests, want 0", hits)
		}
		mu.Unlock()
		if rc.hits("/ok") != 1 {
			t.Errorf("the allowed receiver got %d requests, want 1", rc.hits("/ok"))
		}
		for _, c := range []store.Channel{loop, meta} {
			ds, _ := st.DeliveriesOf(context.Background(), r.user.ID, r.user.ID, c.ID, 5)
			if len(ds) != 1 || ds[0].State != store.DeliveryFailed || ds[0].Attempts != 1 || !strings.Contains(ds[0].LastError, "not allowed") && !strings.Contains(ds[0].LastError, "blocked") && !strings.Contains(ds[0].LastError, "refus") {
				t.Errorf("%s deliveries = %+v, want one failed at once by the guard", c.Name, ds)
			}
			if got, _ := st.Channel(context.Background(), r.user.ID, c.ID); got.FailingSince == nil {
				t.Errorf("%s is not marked failing", c.Name)
			}
		}
	})
}

// A channel whose deliveries fail for 24 hours is marked failing and its workspace's owners are
// e-mailed once, however many deliveries give up; an editor is not e-mailed; the messages go
// through the Mail function (SMTP's), a double here. An email channel mails the members who
// opted in the event, through the same function.
func TestAlertsFailingChannelMailsTheOwnersOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		r := newRig(t, st)
		editor := store.User{ID: store.NewID(), Email: "editor-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: time.Now()}
		if err := st.CreateUser(ctx, editor); err != nil {
			t.Fatal(err)
		}
		tok := store.NewID()
		if err := st.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: tok, WorkspaceID: r.user.ID, Email: editor.Email, Role: store.RoleEditor,
			InvitedBy: r.user.ID, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AcceptInvitation(ctx, tok, editor.ID, editor.Email, time.Now()); err != nil {
			t.Fatal(err)
		}
		keys := platform.RandomKeys()
		rc := newReceivers(t, map[string][]int{"/down": {503}})
		down := r.addChannel(keys, store.ChannelTeams, rc.srv.URL+"/down", store.EventScanFailed)
		mailCh := r.addChannel(keys, store.ChannelEmail, "", store.EventScanFailed)
		var mu sync.Mutex
		var mails []string // "to|subject|body"
		mail := func(_ context.Context, to, subject, body string) error {
			mu.Lock()
			defer mu.Unlock()
			mails = append(mails, to+"|"+subject+"|"+body)
			return nil
		}
		clock := scantest.NewClock(time.Now().Add(time.Second))
		ap := r.alertPool(keys, rc.guard().Client(), clock, mail)
		start := clock.Now()
		r.planOne(down, "evt_a", start)
		r.planOne(down, "evt_b", start)
		r.planOne(mailCh, "evt_m", start)
		drain(t, ap, notify.KindDelivery)
		for clock.Now().Sub(start) < 26*time.Hour {
			clock.Advance(10 * time.Minute)
			drain(t, ap, notify.KindDelivery)
		}
		got, _ := st.Channel(ctx, r.user.ID, down.ID)
		if got.FailingSince == nil {
			t.Fatal("a channel failing for 24 h is not marked failing")
		}
		ds, _ := st.DeliveriesOf(ctx, r.user.ID, r.user.ID, down.ID, 5)
		for _, d := range ds {
			if d.State != store.DeliveryFailed || d.Attempts < 10 {
				t.Errorf("delivery %s: %s after %d attempts, want failed after a day of retries", d.EventID, d.State, d.Attempts)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		var toOwner, toEditor, event []string
		for _, m := range mails {
			to, rest, _ := strings.Cut(m, "|")
			switch {
			case strings.Contains(rest, "is failing") && to == r.user.Email:
				toOwner = append(toOwner, rest)
			case strings.Contains(rest, "is failing"):
				toEditor = append(toEditor, to)
			case strings.Contains(rest, "Scan failed on"):
				event = append(event, to)
			}
		}
		if len(toOwner) != 1 || !strings.Contains(toOwner[0], down.Name) || !strings.Contains(toOwner[0], "/workspaces/"+r.user.ID+"/notifications") {
			t.Errorf("the owner got %d failing notices, want 1 naming the channel and linking its page: %v", len(toOwner), toOwner)
		}
		if len(toEditor) != 0 {
			t.Errorf("failing notices went to non-owners: %v", toEditor)
		}
		// The email channel: the owner (notifications on) and the editor (on by default) each get it.
		if len(event) != 2 {
			t.Errorf("the email channel's event went to %v, want the two members who opted in", event)
		}
	})
}
