package handlers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// lateField is a field store set once the fixture has seeded the demo site it serves.
type lateField struct{ store.FieldReads }

// TestUIFieldBesideLab: the site page, the scan page and the page detail show the demo's
// recorded field story beside the lab: the trend with its bands, the lab/field disagreement,
// the CLS regression of the publish felt by users (and the LCP one not), the field-only INP
// regression naming its element, the slowest interactions; a site without field data says so,
// and another account's site is not found.
func TestUIFieldBesideLab(t *testing.T) {
	rec, err := demo.LoadField(os.DirFS(".."))
	must(t, err)
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			lf := &lateField{}
			st := b.Open(t)
			f := newUIFixture(t, 0, st, func(d *Deps) { d.Field = lf })
			ctx := context.Background()
			pubs, err := st.Publishes(ctx, f.a.userID, f.site, time.Time{}, 10)
			if err != nil || len(pubs) != 1 {
				t.Fatalf("publishes %v %v", pubs, err)
			}
			lf.FieldReads = demo.NewField(rec, f.site, pubs[0].PublishedOn, st, st, nil)
			f.ts.now = pubs[0].PublishedOn.Add(50 * time.Hour) // two days on: the beacon has days after the publish

			for _, path := range []string{"/sites/" + f.site, "/sites/" + f.site + "/scans/" + f.scan} {
				resp, body := f.a.get(path)
				wantStatus(t, resp, 200)
				for _, want := range []string{`id="field"`, `class="band band-good"`, `class="line s-crux"`, `class="line s-beacon"`,
					"Lab and field disagree · LCP: lab says poor",
					"felt by users: CLS p75 0.03 → 0.24 on phones since the publish of",
					"not felt by users: LCP p75 2.6 s → 2.6 s on phones",
					"not yet seen in the field: CrUX&#39;s 28-day window",
					"Field-only regression · INP p75 394 ms on /pricing: click on button.plan-toggle",
					`id="slow-interactions"`, "div.chat-launcher &gt; button"} {
					if !strings.Contains(body, want) {
						t.Errorf("%s lacks %q", path, want)
					}
				}
			}
			resp, body := f.a.get("/sites/" + f.site + "/scans/" + f.scan + "/page?path=%2Fpricing&strategy=mobile")
			wantStatus(t, resp, 200)
			for _, want := range []string{"what real users measured on /pricing", "Lab and field disagree · LCP: lab says poor (4.6 s), field says needs improvement",
				"button.plan-toggle", `<g class="publish">`} {
				if !strings.Contains(body, want) {
					t.Errorf("the page detail lacks %q", want)
				}
			}
			if strings.Contains(body, "button.menu-toggle") {
				t.Error("the pricing page lists the home page's interactions")
			}

			// The JSON export carries each row's field figures as of the scan: INP still good then.
			resp, body = f.a.get("/api/sites/" + f.site + "/export?format=json&scanId=" + f.scan)
			wantStatus(t, resp, 200)
			var rows []struct {
				PagePath string
				Strategy string
				Field    *struct {
					Device string
					Crux   map[string]struct{ P75 float64 }
					Beacon map[string]struct {
						P75     float64
						Rating  string
						Samples int64
					}
				}
			}
			must(t, json.Unmarshal([]byte(body), &rows))
			seen := 0
			for _, r := range rows {
				switch {
				case r.PagePath == "/pricing" && r.Strategy == "mobile":
					seen++
					if r.Field == nil || r.Field.Device != "phone" || r.Field.Beacon["inp"].P75 >= 200 || r.Field.Crux["lcp"].P75 == 0 {
						t.Errorf("/pricing mobile field %+v", r.Field)
					}
				case r.Strategy == "desktop" || r.PagePath == "/about":
					if r.Field != nil {
						t.Errorf("%s %s has no field data, got %+v", r.PagePath, r.Strategy, r.Field)
					}
				}
			}
			if seen != 1 || strings.Count(body, `"field":`) != 2 { // /pricing and / on phones
				t.Errorf("export rows with field figures: %d in %.200s", strings.Count(body, `"field":`), body)
			}

			// The budget check holds field budgets when asked; without them it answers as ever.
			key, hash := store.NewSecret("svc_")
			must(t, st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: f.a.userID, Name: "ci", KeyHash: hash, Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: f.ts.now}))
			check := func(body string) (int, string) {
				req, _ := http.NewRequest("POST", f.ts.URL+"/api/external/budget-check", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				must(t, err)
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			plain, without := check(`{"siteId":"` + f.site + `"}`)
			if plain != 200 || strings.Contains(without, "field") {
				t.Errorf("the check without field budgets: %d %s", plain, without)
			}
			code, with := check(`{"siteId":"` + f.site + `","fieldBudgets":{"inp":200,"lcp":4000}}`)
			if code != 200 || !strings.HasPrefix(with, strings.TrimSuffix(strings.Replace(without, `"pass":false`, `"pass":false`, 1), "}\n")) ||
				!strings.Contains(with, `"fieldViolations":[{"metric":"inp","operator":"max","threshold":200,"actual":205,"source":"beacon","device":"phone"}]`) {
				t.Errorf("field budgets: %d\n%s\nwithout them:\n%s", code, with, without)
			}
			for _, bad := range []string{`{"nope":1}`, `{"inp":-1}`, `[]`, `{}`} {
				if code, body := check(`{"siteId":"` + f.site + `","fieldBudgets":` + bad + `}`); code != 422 || !strings.Contains(body, "fieldBudgets") {
					t.Errorf("fieldBudgets %s: %d %s", bad, code, body)
				}
			}
			if code, _ := check(`{"siteId":"` + f.site + `","fieldBudgets":{"inp":300},"format":"junit"}`); code != 422 {
				t.Errorf("field budgets with a CI format: %d", code)
			}
			if code, _ := check(`{"siteId":"` + f.bSite + `","fieldBudgets":{"inp":300}}`); code != 404 {
				t.Errorf("another account's site: %d", code)
			}

			// B's site has no field data; A's site is not B's.
			resp, body = f.b.get("/sites/" + f.bSite)
			wantStatus(t, resp, 200)
			if !strings.Contains(body, "No field data for this site yet.") || strings.Contains(body, `class="line s-beacon"`) {
				t.Error("B's site page should say it has no field data")
			}
			resp, _ = f.b.get("/sites/" + f.site)
			wantStatus(t, resp, 404)
			if _, err := lf.BeaconSeries(ctx, f.b.userID, f.site, store.FieldQuery{}); err == nil {
				t.Error("the demo's field reads served another account")
			}
		})
	}
}

// TestUINoFieldStore: without a field store every site says it has no field data.
func TestUINoFieldStore(t *testing.T) {
	f := newUIFixture(t, 0, storetest.Backends(t)[0].Open(t))
	resp, body := f.a.get("/sites/" + f.site)
	wantStatus(t, resp, 200)
	if !strings.Contains(body, `id="no-field"`) || !strings.Contains(body, "No field data for this site yet.") {
		t.Error("the site page should say the site has no field data")
	}
}

// TestUIFieldFromTheStores: a site's own beacon days, written as the ingest writes them, reach
// its page through the stores' field reads as run() wires them (the demo's overlay over the
// store, for a site that is not the demo's): the trend, the field-only INP regression naming
// its element, and the slowest interaction.
func TestUIFieldFromTheStores(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			lf := &lateField{}
			st := b.Open(t)
			f := newUIFixture(t, 0, st, func(d *Deps) { d.Field = lf })
			lf.FieldReads = demo.NewField(demo.FieldRecording{}, "", time.Time{}, st, st, st)
			ctx := context.Background()
			day0 := store.BeaconDay(f.ts.now).AddDate(0, 0, -9)
			var batch store.BeaconBatch
			for i, v := range []float64{170, 180, 175, 185, 180, 178, 182, 420, 430} {
				for _, path := range []string{"", "/pricing"} {
					batch.Counts = append(batch.Counts, store.BeaconCount{SiteID: f.bSite, Day: day0.AddDate(0, 0, i), Path: path, Device: store.FieldPhone,
						Metric: "inp", Bin: store.BeaconBin("inp", v), Count: 60, Kept: 60})
				}
			}
			for _, part := range store.BeaconInteractionParts {
				batch.Interactions = append(batch.Interactions, store.BeaconInteractionCount{SiteID: f.bSite, Day: day0.AddDate(0, 0, 8), Path: "/pricing",
					Device: store.FieldPhone, Selector: "button.plan-toggle", EventType: "click", Part: part, Bin: store.BeaconBin("inp", 300), Count: 12, Seen: day0.AddDate(0, 0, 8)})
			}
			_, err := st.AddBeacons(ctx, batch)
			must(t, err)
			resp, body := f.b.get("/sites/" + f.bSite)
			wantStatus(t, resp, 200)
			for _, want := range []string{`class="line s-beacon"`, "Field-only regression · INP p75", "on the whole site: click on button.plan-toggle (/pricing)",
				`id="slow-interactions"`, "button.plan-toggle"} {
				if !strings.Contains(body, want) {
					t.Errorf("B's site page lacks %q", want)
				}
			}
			if resp, body := f.a.get("/sites/" + f.site); resp.StatusCode != 200 || strings.Contains(body, "button.plan-toggle") {
				t.Error("A's site shows B's beacon figures")
			}
		})
	}
}
