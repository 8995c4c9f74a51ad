package platform_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"sitepulse/scanner/platform"
	"sitepulse/scanner/platform/platformtest"
	"sitepulse/store"
)

var beaconScript = platform.HostedScript{DisplayName: "SitePulse", URL: "https://pulse.example/beacon/v1.js",
	Integrity: "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC", Attributes: map[string]any{"data-site": "bk_abc"}}

// importedSite connects (the app registered for appScopes), imports acme and answers its
// SitePulse site as the store holds it.
func importedSite(t *testing.T, appScopes []string) (*platform.Connector, *platformtest.Platform, string, func() store.Site) {
	t.Helper()
	c, double, userID := connectedWith(t, appScopes)
	res, err := c.Import(context.Background(), userID, userID, []string{acme})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("import %+v, %v", res, err)
	}
	site := func() store.Site {
		s, err := c.Store.(store.Store).Site(context.Background(), userID, res[0].SiteID)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return c, double, userID, site
}

// TestInstallScript: the script is registered once (its version from its URL and hash), applied
// in the footer with its data-site attribute, beside the site's other scripts, and recorded;
// a second install registers nothing and sends the same body; remove takes out ours only.
func TestInstallScript(t *testing.T) {
	ctx := context.Background()
	c, double, userID, site := importedSite(t, nil)
	// The site already has a script the app applied: a header script kept as it is.
	other := platform.AppliedScript{ID: "cmsslider", Location: platform.LocationHeader, Version: "1.0.0", Attributes: map[string]any{"data-speed": "3"}}
	double.SeedScript(acme, platform.RegisteredScript{DisplayName: "CmsSlider", HostedLocation: "https://cdn.example/slider.js",
		IntegrityHash: "sha384-AAAA", Version: "1.0.0"}, &other)

	rec, err := c.InstallScript(ctx, userID, site(), beaconScript)
	if err != nil {
		t.Fatal(err)
	}
	version := platform.ScriptVersion(beaconScript.URL, beaconScript.Integrity)
	if rec.ID != "sitepulse" || rec.Version != version {
		t.Errorf("recorded %+v, want sitepulse %s", rec, version)
	}
	if got := site().PlatformScript; got == nil || *got != rec {
		t.Errorf("site records %+v, want %+v", got, rec)
	}
	register := "POST /v2/sites/" + acme + "/registered_scripts/hosted"
	wantReg := `{"hostedLocation":"https://pulse.example/beacon/v1.js","integrityHash":"` + beaconScript.Integrity + `","version":"` + version + `","displayName":"SitePulse","canCopy":false}`
	if got := string(double.Body(register)); got != wantReg {
		t.Errorf("register body\n got %s\nwant %s", got, wantReg)
	}
	apply := "PUT /v2/sites/" + acme + "/custom_code"
	wantApply := `{"scripts":[{"id":"cmsslider","location":"header","version":"1.0.0","attributes":{"data-speed":"3"}},` +
		`{"id":"sitepulse","location":"footer","version":"` + version + `","attributes":{"data-site":"bk_abc"}}]}`
	if got := string(double.Body(apply)); got != wantApply {
		t.Errorf("apply body\n got %s\nwant %s", got, wantApply)
	}

	// Again: nothing registered twice, the same list applied.
	if _, err := c.InstallScript(ctx, userID, site(), beaconScript); err != nil {
		t.Fatal(err)
	}
	if n := double.Calls(register); n != 1 {
		t.Errorf("%d registrations after two installs, want 1", n)
	}
	if got := string(double.Body(apply)); got != wantApply {
		t.Errorf("second apply body\n got %s", got)
	}
	if n := len(double.RegisteredScripts(acme)); n != 2 {
		t.Errorf("%d registered scripts, want 2", n)
	}

	// Remove: ours goes, the other stays, the record is cleared.
	if err := c.RemoveScript(ctx, userID, site()); err != nil {
		t.Fatal(err)
	}
	if got := double.AppliedScripts(acme); !reflect.DeepEqual(got, []platform.AppliedScript{other}) {
		t.Errorf("after remove the site applies %+v, want only %+v", got, other)
	}
	if site().PlatformScript != nil {
		t.Errorf("the record stayed: %+v", site().PlatformScript)
	}
}

// TestInstallScriptAfterRegistrationLost: the platform registered the version but its answer was
// lost (500 after acting): the install lists again and applies it, without a second one.
func TestInstallScriptAfterRegistrationLost(t *testing.T) {
	ctx := context.Background()
	c, double, userID, site := importedSite(t, nil)
	register := "POST /v2/sites/" + acme + "/registered_scripts/hosted"
	double.FailAfterCall(register, 1)
	if _, err := c.InstallScript(ctx, userID, site(), beaconScript); err != nil {
		t.Fatal(err)
	}
	if n, applied := len(double.RegisteredScripts(acme)), double.AppliedScripts(acme); n != 1 || len(applied) != 1 {
		t.Errorf("%d registered, applied %+v", n, applied)
	}
}

// TestInstallScriptNeedsScope: a connection whose token lacks custom_code (an app registered
// before SitePulse asked for it) asks to connect again, and nothing is called.
func TestInstallScriptNeedsScope(t *testing.T) {
	ctx := context.Background()
	c, double, userID, site := importedSite(t, []string{"sites:read", "sites:write", "pages:read"})
	_, err := c.InstallScript(ctx, userID, site(), beaconScript)
	if !errors.Is(err, platform.ErrScope) {
		t.Fatalf("install = %v, want ErrScope", err)
	}
	if n := double.Calls("GET /v2/sites/" + acme + "/registered_scripts"); n != 0 {
		t.Errorf("%d calls to the platform with a token that cannot", n)
	}
	// A record that says the scope was granted, and a platform that refuses it: the same.
	conn, _ := c.Store.PlatformConnection(ctx, userID)
	conn.Scopes = platform.ScriptScopes
	if err := c.Store.SavePlatformConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InstallScript(ctx, userID, site(), beaconScript); !errors.Is(err, platform.ErrScope) {
		t.Fatalf("install with the scope refused = %v, want ErrScope", err)
	}
	if site().PlatformScript != nil || len(double.AppliedScripts(acme)) != 0 {
		t.Errorf("half state: %+v, %+v", site().PlatformScript, double.AppliedScripts(acme))
	}
}

// TestInstallScriptPlatformDown: 429 past the longest wait, or 5xx through every retry: an
// ErrUnavailable, the site's custom code as it was and nothing recorded.
func TestInstallScriptPlatformDown(t *testing.T) {
	ctx := context.Background()
	for name, fault := range map[string]func(*platformtest.Platform){
		"429": func(d *platformtest.Platform) { d.Throttle(100, "3600") },
		"503": func(d *platformtest.Platform) { d.Fail(100, http.StatusServiceUnavailable) },
		"apply 500": func(d *platformtest.Platform) {
			d.FailCall("PUT /v2/sites/"+acme+"/custom_code", 100)
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, double, userID, site := importedSite(t, nil)
			fault(double)
			if _, err := c.InstallScript(ctx, userID, site(), beaconScript); !errors.Is(err, platform.ErrUnavailable) {
				t.Fatalf("install = %v, want ErrUnavailable", err)
			}
			if site().PlatformScript != nil || len(double.AppliedScripts(acme)) != 0 {
				t.Errorf("half state: %+v, %+v", site().PlatformScript, double.AppliedScripts(acme))
			}
		})
	}
}
