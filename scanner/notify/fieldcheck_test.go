package notify

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestFieldCheckAlertsWithoutAScan: a site with the beacon and no scan for days gets its
// field-only regression alerted by the daily field check, the slowest interaction named; the
// check enqueued again the same day, a retry, or the next day's check while the regression lasts
// plans nothing more. On both stores, on an injected clock.
func TestFieldCheckAlertsWithoutAScan(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			u := store.User{ID: store.NewID(), Email: "field@example.com", PasswordHash: "x", CreatedAt: now}
			must(st.CreateUser(ctx, u))
			site := store.Site{ID: store.NewID(), UserID: u.ID, WorkspaceID: u.ID, Name: "Shop", Domain: "shop.example", CreatedAt: now}
			must(st.CreateSite(ctx, site))
			ch := store.Channel{ID: store.NewID(), WorkspaceID: u.ID, Kind: KindSlack, Name: "field", URLSealed: "x", Events: []string{store.EventFieldRegression}, CreatedAt: now}
			must(st.CreateChannel(ctx, u.ID, ch))

			day0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
			addDay := func(i int, inp float64) {
				t.Helper()
				d := day0.AddDate(0, 0, i)
				var batch store.BeaconBatch
				for _, path := range []string{"/pricing", ""} {
					batch.Counts = append(batch.Counts, store.BeaconCount{SiteID: site.ID, Day: d, Path: path, Device: store.FieldPhone, Metric: "inp",
						Bin: store.BeaconBin("inp", inp), Count: 80, Kept: 80})
				}
				for _, part := range store.BeaconInteractionParts {
					batch.Interactions = append(batch.Interactions, store.BeaconInteractionCount{SiteID: site.ID, Day: d, Path: "/pricing", Device: store.FieldPhone,
						Selector: "button.plan-toggle", EventType: "click", Part: part, Bin: store.BeaconBin("inp", inp), Count: 40, Seen: d.Add(time.Hour)})
				}
				batch.Seen = []store.BeaconSeen{{SiteID: site.ID, Day: d, Seen: 80}}
				_, err := st.AddBeacons(ctx, batch)
				must(err)
			}
			for i, v := range []float64{170, 180, 175, 185, 180, 178, 182, 380, 460} {
				addDay(i, v)
			}
			clock := day0.AddDate(0, 0, 9).Add(6 * time.Hour)
			check := &FieldCheck{Store: st, Field: st, BaseURL: "https://sitepulse.example.com", Now: func() time.Time { return clock },
				Log: slog.New(slog.DiscardHandler)}
			// runDue schedules at the clock, works every check job due, and answers the field
			// events newly planned (one delivery job each: one channel).
			runDue := func(wantJobs int) []Event {
				t.Helper()
				n, err := check.ScheduleOnce(ctx, clock)
				must(err)
				if n != wantJobs {
					t.Fatalf("%d checks enqueued, want %d", n, wantJobs)
				}
				for range n {
					j, err := st.ClaimJob(ctx, store.KindField, "w", clock, 0)
					must(err)
					var args store.FieldJob
					must(json.Unmarshal(j.Args, &args))
					for range 2 { // the job, and a retry of it (another process, a crash before completing)
						must(check.Work(ctx, j, args))
					}
					must(st.CompleteJob(ctx, j.Lease(), clock))
				}
				var out []Event
				for {
					j, err := st.ClaimJob(ctx, KindDelivery, "w", clock, 0)
					if err != nil {
						break
					}
					var d Dispatch
					must(json.Unmarshal(j.Args, &d))
					if d.ChannelID != ch.ID || d.Event.Type != store.EventFieldRegression {
						t.Errorf("delivery %+v", d)
					}
					out = append(out, d.Event)
					must(st.CompleteJob(ctx, j.Lease(), clock))
				}
				return out
			}
			events := runDue(1)
			texts := map[string]bool{}
			for _, e := range events {
				if len(e.Data.FieldOnly) != 1 || e.ID != FieldEventID(site.ID, e.Data.FieldOnly[0]) || e.Site.ID != site.ID {
					t.Errorf("event %+v", e)
					continue
				}
				texts[e.Data.FieldOnly[0].Text] = true
			}
			var pricing string
			for txt := range texts {
				if strings.Contains(txt, "on /pricing: click on button.plan-toggle") {
					pricing = txt
				}
			}
			if len(events) != 2 || pricing == "" || !strings.HasPrefix(pricing, "INP p75 3") {
				t.Fatalf("planned %d field events %v, want the whole site's and /pricing's INP with its slowest interaction named", len(events), texts)
			}
			// The chat message names the regression and links the site's page (there is no scan).
			if sum := summarize(events[0]); sum.button != "Open site" || sum.url != "https://sitepulse.example.com/sites/"+site.ID ||
				!strings.Contains(sum.title, "1 field-only regression on Shop") {
				t.Errorf("message %+v", sum)
			}
			// Later the same day: no second check.
			clock = clock.Add(10 * time.Hour)
			if got := runDue(0); len(got) != 0 {
				t.Fatalf("later the same day: %d more", len(got))
			}
			// The next day it lasts: checked again, alerted already.
			addDay(9, 470)
			clock = day0.AddDate(0, 0, 10).Add(time.Hour)
			if got := runDue(1); len(got) != 0 {
				t.Fatalf("the next day, the same regression: %d more events %+v", len(got), got)
			}
		})
	}
}

// TestFieldCheckOnCruxAlone: a site with CrUX history and no beacon is judged on CrUX's weekly
// periods (analysis.CruxFieldRule): its origin's LCP crossing into needs improvement for two
// periods is alerted once, named as CrUX's. Both stores.
func TestFieldCheckOnCruxAlone(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			u := store.User{ID: store.NewID(), Email: "crux-field@example.com", PasswordHash: "x", CreatedAt: now}
			must(st.CreateUser(ctx, u))
			site := store.Site{ID: store.NewID(), UserID: u.ID, WorkspaceID: u.ID, Name: "Blog", Domain: "blog.example", CreatedAt: now}
			must(st.CreateSite(ctx, site))
			ch := store.Channel{ID: store.NewID(), WorkspaceID: u.ID, Kind: KindSlack, Name: "field", URLSealed: "x", Events: []string{store.EventFieldRegression}, CreatedAt: now}
			must(st.CreateChannel(ctx, u.ID, ch))
			end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
			var pts []store.FieldPoint
			for i, v := range []float64{2000, 2100, 2050, 2080, 2700, 2900} {
				e, p75 := end.AddDate(0, 0, 7*(i-5)), v
				pts = append(pts, store.FieldPoint{Source: store.FieldCrUX, Device: store.FieldPhone, Metric: "lcp", Start: e.AddDate(0, 0, -28), End: e, P75: &p75})
			}
			must(st.SaveCrux(ctx, site.ID, store.CruxRecord{Device: store.FieldPhone, Found: true, Points: pts}, end))
			clock := end.Add(5 * time.Hour)
			check := &FieldCheck{Store: st, Field: st, BaseURL: "https://sitepulse.example.com", Now: func() time.Time { return clock }, Log: slog.New(slog.DiscardHandler)}
			var texts []string
			for range 2 { // today's check and tomorrow's
				n, err := check.ScheduleOnce(ctx, clock)
				must(err)
				for range n {
					j, err := st.ClaimJob(ctx, store.KindField, "w", clock, 0)
					must(err)
					var args store.FieldJob
					must(json.Unmarshal(j.Args, &args))
					must(check.Work(ctx, j, args))
					must(st.CompleteJob(ctx, j.Lease(), clock))
				}
				for {
					j, err := st.ClaimJob(ctx, KindDelivery, "w", clock, 0)
					if err != nil {
						break
					}
					var d Dispatch
					must(json.Unmarshal(j.Args, &d))
					for _, r := range d.Event.Data.FieldOnly {
						texts = append(texts, r.Text)
					}
					must(st.CompleteJob(ctx, j.Lease(), clock))
				}
				clock = clock.AddDate(0, 0, 1)
			}
			if len(texts) != 1 || texts[0] != "LCP p75 2.7 s on the whole site (phones, CrUX)" {
				t.Fatalf("alerted %q, want the origin's LCP from CrUX once", texts)
			}
		})
	}
}
