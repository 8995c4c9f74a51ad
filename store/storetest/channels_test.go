package storetest_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
)

// testChannels: a channel is its workspace's: its owners and editors add and delete it, a viewer
// reads it, a stranger sees nothing of it; it is validated at the door, capped per workspace, and
// keeps its deliveries newest first, one row per event, until it is deleted.
func testChannels(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	ed := newUser(t, s, "editor@example.com")
	vw := newUser(t, s, "viewer@example.com")
	w := team(t, s, a, "Agency", map[store.User]store.Role{ed: store.RoleEditor, vw: store.RoleViewer})
	site := teamSite(t, s, a, w, "Shop")
	ch := store.Channel{ID: store.NewID(), WorkspaceID: w.ID, Kind: store.ChannelSlack, Name: " Team chat ", URLSealed: "k1.sealed",
		Events: []string{store.EventScanFailed, store.EventRegressionConfirmed}, SiteIDs: []string{site.ID, site.ID}, CreatedAt: t0}
	must(t, s.CreateChannel(ctx, ed.ID, ch))
	got, err := s.Channel(ctx, w.ID, ch.ID)
	must(t, err)
	if got.Name != "Team chat" || got.WorkspaceID != w.ID || fmt.Sprint(got.Events) != "[regression.confirmed scan.failed]" || fmt.Sprint(got.SiteIDs) != "["+site.ID+"]" ||
		got.URLSealed != "k1.sealed" || !got.CreatedAt.Equal(t0) || got.FailingSince != nil {
		t.Errorf("channel = %+v", got)
	}
	_, err = s.Channel(ctx, a.ID, ch.ID) // a's personal workspace has no such channel
	wantErr(t, err, store.ErrNotFound)
	for _, u := range []store.User{a, ed, vw} {
		if list, _ := s.ChannelsIn(ctx, u.ID, w.ID); len(list) != 1 || list[0].ID != ch.ID {
			t.Errorf("%s lists %+v, want the workspace's channel", u.Email, list)
		}
	}
	if list, _ := s.ChannelsIn(ctx, b.ID, w.ID); len(list) != 0 {
		t.Errorf("a stranger lists the workspace's channels: %+v", list)
	}
	if list, _ := s.WorkspaceChannels(ctx, w.ID); len(list) != 1 {
		t.Errorf("the system lists %+v", list)
	}
	// Only owners and editors add: a viewer's or a stranger's channel is refused as not found.
	for _, u := range []store.User{vw, b} {
		c := ch
		c.ID = store.NewID()
		wantErr(t, s.CreateChannel(ctx, u.ID, c), store.ErrNotFound)
	}

	for _, bad := range []store.Channel{
		{Kind: "irc", Name: "x", URLSealed: "u", Events: []string{store.EventScanFailed}},
		{Kind: store.ChannelWebhook, Name: "x", Events: []string{store.EventScanFailed}},
		{Kind: store.ChannelSlack, Name: "x", URLSealed: "u", Events: []string{"scan.started"}},
		{Kind: store.ChannelSlack, Name: "x", URLSealed: "u"},
		{Kind: store.ChannelSlack, Name: "a\u202eb", URLSealed: "u", Events: []string{store.EventScanFailed}},
		{Kind: store.ChannelSlack, Name: "x", URLSealed: "u", Events: []string{store.EventScanFailed}, SiteIDs: []string{"nope"}},
	} {
		bad.ID, bad.WorkspaceID, bad.CreatedAt = store.NewID(), w.ID, t0
		if err := s.CreateChannel(ctx, a.ID, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateChannel(%+v) = %v, want invalid", bad, err)
		}
	}

	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Minute)
		must(t, s.RecordDelivery(ctx, w.ID, store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: fmt.Sprint("evt", i),
			EventType: store.EventScanFailed, State: store.DeliveryPending, Attempts: 1, NextAt: &at, LastStatus: 503, LastError: "503", CreatedAt: at}))
	}
	// The same event again updates its row: one delivery per event and channel.
	must(t, s.RecordDelivery(ctx, w.ID, store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: "evt0", EventType: store.EventScanFailed,
		State: store.DeliveryDelivered, Attempts: 3, LastStatus: 200, CreatedAt: t0.Add(time.Hour)}))
	wantErr(t, s.RecordDelivery(ctx, b.ID, store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: "evtB", EventType: store.EventTest, State: store.DeliveryDelivered, CreatedAt: t0}), store.ErrNotFound)
	list, err := s.DeliveriesOf(ctx, vw.ID, w.ID, ch.ID, 2)
	must(t, err)
	if len(list) != 2 || list[0].EventID != "evt2" || list[1].EventID != "evt1" {
		t.Errorf("deliveries = %+v, want evt2, evt1", list)
	}
	all, _ := s.DeliveriesOf(ctx, a.ID, w.ID, ch.ID, 50)
	if len(all) != 3 || all[2].State != store.DeliveryDelivered || all[2].Attempts != 3 || all[2].NextAt != nil || all[2].LastStatus != 200 {
		t.Errorf("evt0 after its update = %+v", all[len(all)-1])
	}
	_, err = s.DeliveriesOf(ctx, b.ID, w.ID, ch.ID, 50)
	wantErr(t, err, store.ErrNotFound)

	wantErr(t, s.DeleteChannel(ctx, b.ID, w.ID, ch.ID), store.ErrNotFound)
	wantErr(t, s.DeleteChannel(ctx, vw.ID, w.ID, ch.ID), store.ErrNotFound)
	wantErr(t, s.DeleteChannel(ctx, a.ID, a.ID, ch.ID), store.ErrNotFound) // not in that workspace
	must(t, s.DeleteChannel(ctx, ed.ID, w.ID, ch.ID))
	_, err = s.DeliveriesOf(ctx, a.ID, w.ID, ch.ID, 50)
	wantErr(t, err, store.ErrNotFound)

	for i := range store.MaxChannelsPerWorkspace {
		must(t, s.CreateChannel(ctx, a.ID, store.Channel{ID: store.NewID(), WorkspaceID: w.ID, Kind: store.ChannelEmail, Name: fmt.Sprint("c", i), Events: []string{store.EventScanFailed}, CreatedAt: t0}))
	}
	wantErr(t, s.CreateChannel(ctx, ed.ID, store.Channel{ID: store.NewID(), WorkspaceID: w.ID, Kind: store.ChannelEmail, Name: "one more", Events: []string{store.EventScanFailed}, CreatedAt: t0}), store.ErrLimit)
	// The cap is the workspace's: a's personal workspace still has room.
	must(t, s.CreateChannel(ctx, a.ID, store.Channel{ID: store.NewID(), WorkspaceID: a.ID, Kind: store.ChannelEmail, Name: "mine", Events: []string{store.EventScanFailed}, CreatedAt: t0}))
	// Deleting the workspace deletes its channels.
	must(t, s.DeleteWorkspace(ctx, a.ID, w.ID))
	if list, _ := s.WorkspaceChannels(ctx, w.ID); len(list) != 0 {
		t.Errorf("%d channels outlive their workspace", len(list))
	}
}

// testBudgetState: the budget state swaps in one step, so of concurrent completions that break
// the budgets exactly one sees the transition (one budget.broken, not several).
func testBudgetState(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site, other := newSite(t, s, a, "Shop"), newSite(t, s, a, "Other")
	broken := store.Triage{BudgetsBroken: true, Broken: []string{"lcp"}}
	results := make(chan bool, 10)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			was, err := s.SwapBudgetState(ctx, site.ID, store.NewID(), broken)
			if err != nil {
				t.Error(err)
			}
			results <- was
		}()
	}
	wg.Wait()
	close(results)
	transitions := 0
	for was := range results {
		if !was {
			transitions++
		}
	}
	if transitions != 1 {
		t.Errorf("%d of 10 concurrent swaps saw pass turn to fail, want 1", transitions)
	}
	recovery := store.NewID()
	if was, _ := s.SwapBudgetState(ctx, site.ID, recovery, store.Triage{}); !was {
		t.Error("the state before recovery was not broken")
	}
	// The same scan again (its alerts job retried): the same answer, nothing moved.
	for range 2 {
		if was, err := s.SwapBudgetState(ctx, site.ID, recovery, broken); err != nil || !was {
			t.Errorf("the recovery's scan swapping again = %v, %v; want its first answer (broken)", was, err)
		}
	}
	if was, _ := s.SwapBudgetState(ctx, site.ID, store.NewID(), store.Triage{}); was {
		t.Error("a retried swap moved the state: the next scan found it broken")
	}
	if was, _ := s.SwapBudgetState(ctx, other.ID, store.NewID(), store.Triage{}); was {
		t.Error("another site's state moved")
	}
	_, err := s.SwapBudgetState(ctx, store.NewID(), store.NewID(), broken)
	wantErr(t, err, store.ErrNotFound)
}

// testChannelFailing: a channel is failing from its first failure until it recovers; of the
// failures that mark it, one alone turns it (its owners are e-mailed once).
func testChannelFailing(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	ch := store.Channel{ID: store.NewID(), WorkspaceID: a.ID, Kind: store.ChannelSlack, Name: "c", URLSealed: "u", Events: []string{store.EventScanFailed}, CreatedAt: t0}
	must(t, s.CreateChannel(ctx, a.ID, ch))
	first, later := t0.Add(time.Hour), t0.Add(2*time.Hour)
	turns := make(chan bool, 10)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turned, err := s.SetChannelFailing(ctx, a.ID, ch.ID, &first)
			if err != nil {
				t.Error(err)
			}
			turns <- turned
		}()
	}
	wg.Wait()
	close(turns)
	n := 0
	for turned := range turns {
		if turned {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d of 10 concurrent failures turned the channel failing, want 1", n)
	}
	if turned, err := s.SetChannelFailing(ctx, a.ID, ch.ID, &later); err != nil || turned {
		t.Errorf("failing again = %v, %v; want not turned", turned, err)
	}
	if got, _ := s.Channel(ctx, a.ID, ch.ID); got.FailingSince == nil || !got.FailingSince.Equal(first) {
		t.Errorf("failing since %v, want the first time %v", got.FailingSince, first)
	}
	_, err := s.SetChannelFailing(ctx, b.ID, ch.ID, nil)
	wantErr(t, err, store.ErrNotFound)
	if turned, err := s.SetChannelFailing(ctx, a.ID, ch.ID, nil); err != nil || turned {
		t.Errorf("recovering = %v, %v", turned, err)
	}
	if got, _ := s.Channel(ctx, a.ID, ch.ID); got.FailingSince != nil {
		t.Errorf("failing since %v after recovery, want nil", got.FailingSince)
	}
	if turned, _ := s.SetChannelFailing(ctx, a.ID, ch.ID, &later); !turned {
		t.Error("failing after a recovery did not turn the channel failing again")
	}
}
