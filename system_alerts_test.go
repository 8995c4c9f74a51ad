package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// Two real processes on one database deliver 100 alert events to a receiver that counts; one is
// killed with SIGKILL mid-way. Every event arrives (the dead process's claimed deliveries are
// returned to the queue when their leases lapse and sent by the other), and at most the few the
// dead process was sending when it died (its 4 delivery workers) arrive twice; the receiver
// drops those by X-SitePulse-Delivery.
func TestSystemAlertsTwoProcessesOneKilled(t *testing.T) {
	if runAsChild() {
		return
	}
	ctx := context.Background()
	st, dsn := storetest.PostgresDSN(t)
	user := store.User{ID: store.NewID(), Email: "alerts@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Sample", Domain: "sample.test", Pages: []string{"/"}, CreatedAt: time.Now()}
	for _, err := range []error{st.CreateUser(ctx, user), st.CreateSite(ctx, site)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	keySpec := base64.StdEncoding.EncodeToString(raw)
	keys, err := platform.ParseKeys(keySpec)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	got := map[string]int{} // delivery id -> requests
	requests := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // a receiver that takes a moment, so the kill finds work in flight
		mu.Lock()
		got[r.Header.Get("X-SitePulse-Delivery")]++
		requests++
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	counts := func() (distinct, total int) {
		mu.Lock()
		defer mu.Unlock()
		return len(got), requests
	}

	sealed, err := keys.SealFor(platform.PurposeChannelURL, recv.URL+"/hook", user.ID)
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := keys.SealFor(platform.PurposeChannelSecret, "whsec_system", user.ID)
	ch := store.Channel{ID: store.NewID(), WorkspaceID: user.ID, Kind: store.ChannelWebhook, Name: "counter", URLSealed: sealed, SecretSealed: secret,
		Events: []string{store.EventScanFailed}, CreatedAt: time.Now()}
	if err := st.CreateChannel(ctx, user.ID, ch); err != nil {
		t.Fatal(err)
	}
	const events = 100
	now := time.Now()
	ds := make([]store.Delivery, events)
	jobs := make([]store.JobArgs, events)
	for i := range events {
		e := notify.Event{ID: fmt.Sprintf("evt_%03d", i), Type: store.EventScanFailed, CreatedAt: now,
			Site: notify.EventSite{ID: site.ID, Name: site.Name, Domain: site.Domain}, Data: notify.EventDetail{Reason: "test"}}
		ds[i] = store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: e.ID, EventType: e.Type, State: store.DeliveryPending, CreatedAt: now}
		jobs[i] = notify.Dispatch{WorkspaceID: user.ID, ChannelID: ch.ID, Event: e}
	}

	env := map[string]string{"DATABASE_URL": dsn, "PLATFORM_TOKEN_KEY": keySpec, "SCAN_ALLOW_PRIVATE": "true", "SCAN_LEASE_SECONDS": "2",
		"PAGESPEED_API_URL": "http://127.0.0.1:1/never"}
	a := startChild(t, "process-a", env)
	b := startChild(t, "process-b", env)
	if n, err := st.PlanDeliveries(ctx, user.ID, ds, jobs, now); err != nil || n != events {
		t.Fatalf("planned %d, %v", n, err)
	}
	if !storetest.Eventually(func() bool { _, total := counts(); return total >= 20 }) {
		t.Fatalf("no deliveries under way; a said:\n%s\nb said:\n%s", a.log, b.log)
	}
	a.kill()
	atKill, _ := counts()
	// Settled is every delivery recorded delivered: the ones the dead process had claimed are
	// sent again once their leases lapse, even those whose request it had made.
	var recs []store.Delivery
	settled := storetest.Eventually(func() bool {
		recs, err = st.DeliveriesOf(ctx, user.ID, user.ID, ch.ID, events)
		if err != nil {
			return true
		}
		for _, d := range recs {
			if d.State != store.DeliveryDelivered {
				return false
			}
		}
		return len(recs) == events
	})
	if err != nil {
		t.Fatal(err)
	}
	if !settled {
		distinct, total := counts()
		t.Fatalf("%d of %d events received (%d requests), not every delivery settled after the kill; b said:\n%s", distinct, events, total, b.log)
	}
	b.stop(t)
	distinct, total := counts()
	t.Logf("%d events delivered by %d requests; %d had arrived when process-a was killed", distinct, total, atKill)
	if dup := total - distinct; dup > 4 {
		t.Errorf("%d events arrived twice, want at most the 4 the killed process could have had in flight", dup)
	}
	if distinct != events {
		t.Errorf("%d distinct events received, want %d", distinct, events)
	}
}
