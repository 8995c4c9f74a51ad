package handlers

import (
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// formErrorsOnly are the UI's POST routes that roleCases walks only with input they refuse
// (the form re-rendered with its error, or an error page), each with the test that sees its
// success answer 303.
var formErrorsOnly = map[string]string{
	"POST /signup":                                "TestPRGSecretsShownOnce (below)",
	"POST /signup/confirm/{token}":                "newUIFixture's b.signup (helpers_test.go: confirm wants 303)",
	"POST /login":                                 "newUIFixture (demo login wants 303)",
	"POST /password/reset/{token}":                "TestResetLink (recovery_test.go)",
	"POST /email/confirm/{token}":                 "TestChangeEmail (account e-mail change, recovery_test.go)",
	"POST /settings/password":                     "TestChangePassword (recovery_test.go)",
	"POST /settings/email":                        "TestChangeEmail (recovery_test.go)",
	"POST /settings/delete":                       "TestDeleteAccount (recovery_test.go)",
	"POST /oauth/consent":                         "browser.answer (oauth_test.go): 303 to the client",
	"POST /platform/import":                       "TestPlatformConnectImportPublishDisconnect (platform_test.go)",
	"POST /workspaces/{workspaceId}/delete":       "TestDeleteWorkspace (teams_test.go)",
	"POST /workspaces/{workspaceId}/sso/verify":   "TestSSODomainVerificationAndRequirement (sso_test.go)",
	"POST /workspaces/{workspaceId}/sso/provider": "TestSSOWorkspaceProvider (sso_workspace_test.go: a provider saved answers 303)",
	"POST /sites/{siteId}/beacon/install":         "TestBeaconOnWebflow (field_beacon_platform_test.go: installed on the platform double, 303 to the Edit page)",
	"POST /sites/{siteId}/beacon/remove":          "TestBeaconOnWebflow (field_beacon_platform_test.go: removed, 303 to the Edit page)",
}

// TestEveryFormRedirects walks the routes table: every POST route of the web UI answers a
// success with 303 (POST-redirect-GET), so that a reload never sends a form again; its refusals
// re-render the form. The JSON and protocol endpoints (/api/...) are not forms.
func TestEveryFormRedirects(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	must(t, err)
	redirects := map[string]bool{}
	for _, c := range roleCases {
		for _, st := range c.want {
			if st == http.StatusSeeOther {
				redirects[c.route] = true
			}
		}
	}
	for _, m := range regexp.MustCompile(`mux\.Handle\("(POST [^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		route := m[1]
		if strings.HasPrefix(route, "POST /api/") {
			continue
		}
		if !redirects[route] && formErrorsOnly[route] == "" {
			t.Errorf("route %q: no roleCase sees it answer 303, and formErrorsOnly names no test that does", route)
		}
		if redirects[route] && formErrorsOnly[route] != "" {
			t.Errorf("route %q is walked with a 303 by roleCases: drop it from formErrorsOnly", route)
		}
	}
}

// TestPRGSecretsShownOnce: a new API key, a webhook channel's signing secret, an invitation
// link and a sign-up answer 303; the page they lead to shows the secret once, with a copy
// button, and never in its address; a reload shows it no more and makes nothing again.
func TestPRGSecretsShownOnce(t *testing.T) {
	f := newUIFixture(t, 0, memory.New())
	resp, _ := f.a.postCSRF("/settings/api-keys", url.Values{"name": {"deploy"}})
	wantStatus(t, resp, http.StatusSeeOther)
	loc := resp.Header.Get("Location")
	if strings.Contains(loc, "svc_") || !strings.Contains(loc, "notice=") {
		t.Fatalf("Location %q: want a notice id, never the key", loc)
	}
	_, body := f.a.get(loc)
	key := regexp.MustCompile(`readonly value="(svc_[A-Za-z0-9_-]+)"`).FindStringSubmatch(body)
	if key == nil {
		t.Fatalf("the page after the redirect shows no key:\n%s", body)
	}
	contains(t, body, `data-copy="notice-secret"`)
	_, body = f.a.get(loc) // the reload
	if strings.Contains(body, key[1]) {
		t.Error("the key is shown again on reload")
	}
	keys, _ := f.ts.store.APIKeys(t.Context(), f.a.userID)
	n := 0
	for _, k := range keys {
		if k.Name == "deploy" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d keys named deploy, want 1", n)
	}
	// Another browser (session) with the same address sees nothing.
	other := f.ts.browser(t)
	if _, body := other.get(loc); strings.Contains(body, key[1]) {
		t.Error("another browser sees the key")
	}

	// Sign-up: a redirect, so a reload sends no second message.
	v := f.ts.browser(t)
	resp, _ = v.post("/signup", url.Values{"email": {"new@example.com"}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/signup?sent=1" {
		t.Errorf("sign-up Location %q", loc)
	}
	_, body = v.get("/signup?sent=1")
	contains(t, body, "Check your e-mail")
}

// TestNoticeShownOnceOnTheServer (issue 44, attack 4): the sealed cookie that carries a new key
// across the redirect is scoped to the one page that shows it, not every request (Path=/), and
// is single-use on the server: the same cookie replayed in the same session, within its five
// minutes, shows the key no more.
func TestNoticeShownOnceOnTheServer(t *testing.T) {
	for _, b := range storetest.Backends(t) { // the record of a notice shown is the store's
		t.Run(b.Name, func(t *testing.T) { noticeShownOnce(t, newUIFixture(t, 0, b.Open(t))) })
	}
}

func noticeShownOnce(t *testing.T, f *uiFixture) {
	resp, _ := f.a.postCSRF("/settings/api-keys", url.Values{"name": {"deploy"}})
	wantStatus(t, resp, http.StatusSeeOther)
	loc := resp.Header.Get("Location")
	var sealed *http.Cookie
	for _, c := range resp.Cookies() {
		if strings.HasSuffix(c.Name, "notice") {
			sealed = c
		}
	}
	if sealed == nil {
		t.Fatal("no notice cookie")
	}
	if sealed.Path != "/settings" {
		t.Errorf("notice cookie Path %q, want /settings: only the page that shows it gets it", sealed.Path)
	}
	_, body := f.a.get(loc)
	key := regexp.MustCompile(`readonly value="(svc_[A-Za-z0-9_-]+)"`).FindStringSubmatch(body)
	if key == nil {
		t.Fatalf("the page after the redirect shows no key:\n%s", body)
	}
	// The replay: the captured cookie put back into the same browser, a minute later.
	u, _ := url.Parse(f.a.base + loc)
	f.a.c.Jar.SetCookies(u, []*http.Cookie{{Name: sealed.Name, Value: sealed.Value, Path: sealed.Path}})
	if _, body := f.a.get(loc); strings.Contains(body, key[1]) {
		t.Error("the replayed notice cookie shows the key a second time")
	}
}
