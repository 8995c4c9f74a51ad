package storetest_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

// testPublishes: a publish keeps who published what, the commit a CI pipeline deployed and the
// scan it started, is read back by its site's owner only, and a name the display-text rule
// refuses (or a commit that is not one) is dropped, not stored.
func testPublishes(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "Shop")
	other := newSite(t, s, b, "Other")
	sc := enqueue(t, s, site, t0)
	otherScan := enqueue(t, s, other, t0)

	first := store.Publish{ID: store.NewID(), SiteID: site.ID, PlatformEventID: "evt_1", PublishedBy: "  Ana ",
		PublishedOn: t0.Add(-time.Hour), Domains: []string{"shop.example", "www.shop.example"}, ScanID: sc.ID,
		Commit: " 1A2B3C4D5E6F7A8B9C0D1E2F3A4B5C6D7E8F9A0B "}
	must(t, s.RecordPublish(ctx, first))
	second := store.Publish{ID: store.NewID(), SiteID: site.ID, PublishedBy: "Bo\u202eb", PublishedOn: t0, Commit: "main; rm -rf /"}
	must(t, s.RecordPublish(ctx, second))
	wantErr(t, s.RecordPublish(ctx, store.Publish{ID: store.NewID(), SiteID: site.ID, PublishedOn: t0, ScanID: otherScan.ID}), store.ErrNotFound)
	wantErr(t, s.RecordPublish(ctx, store.Publish{ID: store.NewID(), SiteID: store.NewID(), PublishedOn: t0}), store.ErrNotFound)
	for i := range 3 {
		must(t, s.RecordPublish(ctx, store.Publish{ID: store.NewID(), SiteID: other.ID, PublishedBy: fmt.Sprint("x", i), PublishedOn: t0}))
	}

	got, err := s.Publishes(ctx, a.ID, site.ID, t0.Add(-2*time.Hour), 10)
	must(t, err)
	want := []store.Publish{first, second}
	want[0].PublishedBy, want[1].PublishedBy, want[1].Domains = "Ana", "", []string{}
	want[0].Commit, want[1].Commit = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("publishes = %+v\nwant %+v", got, want)
	}
	if got, _ := s.Publishes(ctx, a.ID, site.ID, t0.Add(-2*time.Hour), 1); len(got) != 1 || got[0].ID != second.ID {
		t.Errorf("publishes limited to 1 = %+v, want the latest", got)
	}
	if got, _ := s.Publishes(ctx, a.ID, site.ID, t0.Add(-time.Minute), 10); len(got) != 1 || got[0].ID != second.ID {
		t.Errorf("publishes since t0-1m = %+v, want the second only", got)
	}
	_, err = s.Publishes(ctx, b.ID, site.ID, t0.Add(-2*time.Hour), 10)
	wantErr(t, err, store.ErrNotFound)

	byScan, err := s.PublishesOfScans(ctx, a.ID, []string{sc.ID, otherScan.ID, "not-a-uuid"})
	must(t, err)
	if len(byScan) != 1 || byScan[sc.ID].PublishedBy != "Ana" || byScan[sc.ID].Commit != want[0].Commit || strings.Join(byScan[sc.ID].Domains, ",") != "shop.example,www.shop.example" {
		t.Errorf("publishes of scans = %+v, want Ana's for %s only", byScan, sc.ID)
	}
	if got, _ := s.PublishesOfScans(ctx, b.ID, []string{sc.ID}); len(got) != 0 {
		t.Errorf("b reads a's publish: %+v", got)
	}
}
