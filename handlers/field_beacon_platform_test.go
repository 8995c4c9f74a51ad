package handlers

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"sitepulse/handlers/beacon"
	"sitepulse/scanner/platform"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestBeaconOnWebflow is "Add to Webflow" end to end on every store, against the platform
// double: the button on a connected site's edit page, the registration and the applied custom
// code byte for byte (the site's other script kept), a second click that registers nothing,
// "Remove from Webflow" taking out ours only, the security log, the platform down (a clear
// message, nothing changed or recorded) and a connection without the custom code scopes (the
// reconnect path).
func TestBeaconOnWebflow(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			r := newPlatformRig(t, b.Open(t))
			a := r.user(t, "ada@example.com")
			r.connect(t, a)
			resp, body := a.postCSRF("/platform/import", url.Values{"site": {northwind}})
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("import: %d\n%.800s", resp.StatusCode, body)
			}
			site := r.sites(t, a.userID)[northwind]
			edit := "/sites/" + site.ID + "/edit"
			key, err := r.st.BeaconKey(ctx, a.userID, site.ID)
			must(t, err)
			// The site already runs another script of the app's, in the header.
			other := platform.AppliedScript{ID: "cmsslider", Location: platform.LocationHeader, Version: "1.0.0", Attributes: map[string]any{"data-speed": "3"}}
			r.double.SeedScript(northwind, platform.RegisteredScript{DisplayName: "CmsSlider", HostedLocation: "https://cdn.example/slider.js",
				IntegrityHash: "sha384-AAAA", Version: "1.0.0"}, &other)

			_, body = a.get(edit)
			for _, want := range []string{"Add to Webflow", `action="/sites/` + site.ID + `/beacon/install#beacon"`, "next publish", "Or paste the tag yourself"} {
				contains(t, body, want)
			}

			resp, _ = a.postCSRF("/sites/"+site.ID+"/beacon/install", nil)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != edit+"?done=beacon-installed#beacon" {
				t.Fatalf("install: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			version := platform.ScriptVersion(r.ts.URL+"/beacon/v1.js", beacon.Script.Integrity)
			register := "POST /v2/sites/" + northwind + "/registered_scripts/hosted"
			wantReg := `{"hostedLocation":"` + r.ts.URL + `/beacon/v1.js","integrityHash":"` + beacon.Script.Integrity + `","version":"` + version +
				`","displayName":"SitePulse","canCopy":false}`
			if got := string(r.double.Body(register)); got != wantReg {
				t.Errorf("the platform received the registration\n%s\nwant\n%s", got, wantReg)
			}
			apply := "PUT /v2/sites/" + northwind + "/custom_code"
			wantApply := `{"scripts":[{"id":"cmsslider","location":"header","version":"1.0.0","attributes":{"data-speed":"3"}},` +
				`{"id":"sitepulse","location":"footer","version":"` + version + `","attributes":{"data-site":"` + key + `"}}]}`
			if got := string(r.double.Body(apply)); got != wantApply {
				t.Errorf("the platform received the custom code\n%s\nwant\n%s", got, wantApply)
			}
			_, body = a.get(edit + "?done=beacon-installed")
			for _, want := range []string{"takes effect when you next publish", "added", "footer of every page", "version " + version, "Remove from Webflow"} {
				contains(t, body, want)
			}
			if strings.Contains(body, ">Add to Webflow<") {
				t.Error("the installed site still offers Add to Webflow")
			}

			// Again (a second tab's click): nothing registered twice, the same custom code.
			resp, _ = a.postCSRF("/sites/"+site.ID+"/beacon/install", nil)
			wantStatus(t, resp, http.StatusSeeOther)
			if n := r.double.Calls(register); n != 1 {
				t.Errorf("%d registrations after two clicks, want 1", n)
			}
			if got := string(r.double.Body(apply)); got != wantApply {
				t.Errorf("the second click applied\n%s", got)
			}

			// The platform down: a clear message, the custom code and the record as they were.
			before := r.double.AppliedScripts(northwind)
			for name, fault := range map[string]func(){"503": func() { r.double.Fail(100, http.StatusServiceUnavailable) },
				"429": func() { r.double.Throttle(100, "3600") }} {
				fault()
				resp, body = a.postCSRF("/sites/"+site.ID+"/beacon/remove", nil)
				if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "Nothing was changed") {
					t.Errorf("remove with the platform answering %s: %d\n%.300s", name, resp.StatusCode, body)
				}
				r.double.Fail(0, 0)
				r.double.Throttle(0, "")
				if s, _ := r.st.Site(ctx, a.userID, site.ID); s.PlatformScript == nil {
					t.Errorf("a failed removal (%s) forgot the script", name)
				}
				if got := r.double.AppliedScripts(northwind); !slices.EqualFunc(got, before, func(x, y platform.AppliedScript) bool { return x.ID == y.ID && x.Version == y.Version }) {
					t.Errorf("a failed removal (%s) changed the site's custom code: %+v", name, got)
				}
			}

			resp, _ = a.postCSRF("/sites/"+site.ID+"/beacon/remove", nil)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != edit+"?done=beacon-removed#beacon" {
				t.Fatalf("remove: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			if got := r.double.AppliedScripts(northwind); len(got) != 1 || got[0].ID != "cmsslider" {
				t.Errorf("after remove the site applies %+v, want the other script only", got)
			}
			_, body = a.get(edit)
			contains(t, body, "Add to Webflow")
			var kinds []string
			storetest.Eventually(func() bool {
				lines, err := r.st.LogOf(ctx, store.LogFilter{WorkspaceID: a.userID, Limit: store.MaxLogPage})
				must(t, err)
				kinds = kinds[:0]
				for _, l := range lines {
					kinds = append(kinds, l.Kind)
				}
				return slices.Contains(kinds, store.LogBeaconRemoved)
			})
			if n := strings.Count(strings.Join(kinds, " "), store.LogBeaconInstalled); n != 2 || !slices.Contains(kinds, store.LogBeaconRemoved) {
				t.Errorf("the security log has %v, want two installs and a removal", kinds)
			}
			if strings.Contains(r.logs.String(), "Bearer") {
				t.Error("a log line holds a bearer token")
			}
		})
	}
}

// TestBeaconOnWebflowNeedsScope: a connection made before SitePulse asked for custom code
// (its record has no scopes) shows the reconnect path instead of the button; the POST answers
// it too, and reconnecting with the scope makes the button work.
func TestBeaconOnWebflowNeedsScope(t *testing.T) {
	ctx := context.Background()
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			r := newPlatformRig(t, b.Open(t))
			a := r.user(t, "ada@example.com")
			r.double.AppScopes = []string{"sites:read", "sites:write", "pages:read"} // the app as it was registered before
			r.connect(t, a)
			resp, _ := a.postCSRF("/platform/import", url.Values{"site": {acme}})
			wantStatus(t, resp, http.StatusSeeOther)
			site := r.sites(t, a.userID)[acme]
			conn, err := r.st.PlatformConnection(ctx, a.userID)
			must(t, err)
			if conn.Granted(platform.ScriptScopes...) {
				t.Fatalf("the connection records scopes %v", conn.Scopes)
			}
			_, body := a.get("/sites/" + site.ID + "/edit")
			contains(t, body, "Reconnect to allow SitePulse to add the script")
			contains(t, body, `href="/platform/connect"`)
			if strings.Contains(body, ">Add to Webflow<") {
				t.Error("the button is offered to a connection that cannot use it")
			}
			resp, body = a.postCSRF("/sites/"+site.ID+"/beacon/install", nil)
			if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "Reconnect to allow SitePulse to add the script") {
				t.Fatalf("install without the scope: %d\n%.500s", resp.StatusCode, body)
			}
			if n := r.double.Calls("POST /v2/sites/" + acme + "/registered_scripts/hosted"); n != 0 || len(r.double.AppliedScripts(acme)) != 0 {
				t.Errorf("%d registrations, applied %+v, want none", n, r.double.AppliedScripts(acme))
			}

			r.double.AppScopes = nil // the app now asks for custom code: reconnect
			resp, _ = a.get("/platform/connect")
			back, err := r.double.Approve(resp.Header.Get("Location"))
			must(t, err)
			u, _ := url.Parse(back)
			resp, _ = a.get(u.RequestURI())
			wantStatus(t, resp, http.StatusSeeOther)
			resp, _ = a.postCSRF("/sites/"+site.ID+"/beacon/install", nil)
			wantStatus(t, resp, http.StatusSeeOther)
			if got := r.double.AppliedScripts(acme); len(got) != 1 || got[0].Location != platform.LocationFooter {
				t.Errorf("after reconnecting the site applies %+v", got)
			}
		})
	}
}
