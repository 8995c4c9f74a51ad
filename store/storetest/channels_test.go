package storetest_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
)

// testChannels: a channel is its owner's alone, validated at the door, capped per account, and
// keeps its deliveries newest first, one row per event, until it is deleted.
func testChannels(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "Shop")
	ch := store.Channel{ID: store.NewID(), UserID: a.ID, Kind: store.ChannelSlack, Name: " Team chat ", URLSealed: "k1.sealed",
		Events: []string{store.EventScanFailed, store.EventRegressionConfirmed}, SiteIDs: []string{site.ID, site.ID}, CreatedAt: t0}
	must(t, s.CreateChannel(ctx, ch))
	got, err := s.Channel(ctx, a.ID, ch.ID)
	must(t, err)
	if got.Name != "Team chat" || fmt.Sprint(got.Events) != "[regression.confirmed scan.failed]" || fmt.Sprint(got.SiteIDs) != "["+site.ID+"]" ||
		got.URLSealed != "k1.sealed" || !got.CreatedAt.Equal(t0) || got.FailingSince != nil {
		t.Errorf("channel = %+v", got)
	}
	_, err = s.Channel(ctx, b.ID, ch.ID)
	wantErr(t, err, store.ErrNotFound)
	if list, _ := s.ChannelsOf(ctx, b.ID); len(list) != 0 {
		t.Errorf("b lists a's channels: %+v", list)
	}

	for _, bad := range []store.Channel{
		{Kind: "irc", Name: "x", URLSealed: "u", Events: []string{store.EventScanFailed}},
		{Kind: store.ChannelWebhook, Name: "x", Events: []string{store.EventScanFailed}},
		{Kind: store.ChannelSlack, Name: "x", URLSealed: "u", Events: []string{"scan.started"}},
		{Kind: store.ChannelSlack, Name: "x", URLSealed: "u"},
		{Kind: store.ChannelSlack, Name: "a\u202eb", URLSealed: "u", Events: []string{store.EventScanFailed}},
		{Kind: store.ChannelSlack, Name: "x", URLSealed: "u", Events: []string{store.EventScanFailed}, SiteIDs: []string{"nope"}},
	} {
		bad.ID, bad.UserID, bad.CreatedAt = store.NewID(), a.ID, t0
		if err := s.CreateChannel(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateChannel(%+v) = %v, want invalid", bad, err)
		}
	}

	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Minute)
		must(t, s.RecordDelivery(ctx, a.ID, store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: fmt.Sprint("evt", i),
			EventType: store.EventScanFailed, State: store.DeliveryPending, Attempts: 1, NextAt: &at, LastStatus: 503, LastError: "503", CreatedAt: at}))
	}
	// The same event again updates its row: one delivery per event and channel.
	must(t, s.RecordDelivery(ctx, a.ID, store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: "evt0", EventType: store.EventScanFailed,
		State: store.DeliveryDelivered, Attempts: 3, LastStatus: 200, CreatedAt: t0.Add(time.Hour)}))
	wantErr(t, s.RecordDelivery(ctx, b.ID, store.Delivery{ID: store.NewID(), ChannelID: ch.ID, EventID: "evtB", EventType: store.EventTest, State: store.DeliveryDelivered, CreatedAt: t0}), store.ErrNotFound)
	list, err := s.DeliveriesOf(ctx, a.ID, ch.ID, 2)
	must(t, err)
	if len(list) != 2 || list[0].EventID != "evt2" || list[1].EventID != "evt1" {
		t.Errorf("deliveries = %+v, want evt2, evt1", list)
	}
	all, _ := s.DeliveriesOf(ctx, a.ID, ch.ID, 50)
	if len(all) != 3 || all[2].State != store.DeliveryDelivered || all[2].Attempts != 3 || all[2].NextAt != nil || all[2].LastStatus != 200 {
		t.Errorf("evt0 after its update = %+v", all[len(all)-1])
	}
	_, err = s.DeliveriesOf(ctx, b.ID, ch.ID, 50)
	wantErr(t, err, store.ErrNotFound)

	wantErr(t, s.DeleteChannel(ctx, b.ID, ch.ID), store.ErrNotFound)
	must(t, s.DeleteChannel(ctx, a.ID, ch.ID))
	_, err = s.DeliveriesOf(ctx, a.ID, ch.ID, 50)
	wantErr(t, err, store.ErrNotFound)

	for i := range store.MaxChannelsPerUser {
		must(t, s.CreateChannel(ctx, store.Channel{ID: store.NewID(), UserID: a.ID, Kind: store.ChannelEmail, Name: fmt.Sprint("c", i), Events: []string{store.EventScanFailed}, CreatedAt: t0}))
	}
	wantErr(t, s.CreateChannel(ctx, store.Channel{ID: store.NewID(), UserID: a.ID, Kind: store.ChannelEmail, Name: "one more", Events: []string{store.EventScanFailed}, CreatedAt: t0}), store.ErrLimit)
}

// testBudgetState: the budget state swaps in one step, so of concurrent completions that break
// the budgets exactly one sees the transition (one budget.broken, not several).
func testBudgetState(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site, other := newSite(t, s, a, "Shop"), newSite(t, s, a, "Other")
	results := make(chan bool, 10)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			was, err := s.SwapBudgetState(ctx, site.ID, true)
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
	if was, _ := s.SwapBudgetState(ctx, site.ID, false); !was {
		t.Error("the state before recovery was not broken")
	}
	if was, _ := s.SwapBudgetState(ctx, other.ID, false); was {
		t.Error("another site's state moved")
	}
	_, err := s.SwapBudgetState(ctx, store.NewID(), true)
	wantErr(t, err, store.ErrNotFound)
}

func testChannelFailing(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	ch := store.Channel{ID: store.NewID(), UserID: a.ID, Kind: store.ChannelSlack, Name: "c", URLSealed: "u", Events: []string{store.EventScanFailed}, CreatedAt: t0}
	must(t, s.CreateChannel(ctx, ch))
	first, later := t0.Add(time.Hour), t0.Add(2*time.Hour)
	must(t, s.SetChannelFailing(ctx, a.ID, ch.ID, &first))
	must(t, s.SetChannelFailing(ctx, a.ID, ch.ID, &later))
	if got, _ := s.Channel(ctx, a.ID, ch.ID); got.FailingSince == nil || !got.FailingSince.Equal(first) {
		t.Errorf("failing since %v, want the first time %v", got.FailingSince, first)
	}
	wantErr(t, s.SetChannelFailing(ctx, b.ID, ch.ID, nil), store.ErrNotFound)
	must(t, s.SetChannelFailing(ctx, a.ID, ch.ID, nil))
	if got, _ := s.Channel(ctx, a.ID, ch.ID); got.FailingSince != nil {
		t.Errorf("failing since %v after recovery, want nil", got.FailingSince)
	}
}
