package handlers

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"sitepulse/store"
)

// TestUITextsPlain: the pages people use name no server setting (environment variables are
// for whoever runs SitePulse), no raw event id, and a site added by hand is not said to be
// scanned on publish. SITEPULSE_API_KEY is the CI secret the user makes, so it may appear, as
// the CI snippets' variables may.
func TestUITextsPlain(t *testing.T) { eachBackend(t, 0, testUITextsPlain) }

func testUITextsPlain(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	hand := store.NewID()
	must(t, f.ts.store.CreateSite(ctx, store.Site{ID: hand, UserID: f.a.userID, Name: "By hand", Domain: "xn--bcher-kva.example"}))
	ws := store.PersonalWorkspace(f.a.userID)
	setting := regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b`)
	event := regexp.MustCompile(`\b(regression\.confirmed|budget\.broken|budget\.recovered|scan\.failed)\b`)
	for _, path := range []string{"/", "/sites/" + f.site, "/sites/" + f.site + "/scans/" + f.scan, "/sites/" + f.site + "/budgets",
		"/sites/" + f.site + "/edit", "/sites/new", "/settings", "/reports", "/workspaces/" + ws, "/workspaces/" + ws + "/notifications", "/sites/" + hand} {
		resp, body := f.a.get(path)
		wantStatus(t, resp, http.StatusOK)
		// What is read, not attributes nor the CI snippets (<pre>), whose variables are the CI's.
		text := regexp.MustCompile(`(?s)<pre.*?</pre>|<[^>]*>`).ReplaceAllString(body, " ")
		for _, m := range setting.FindAllString(text, -1) {
			if m != "SITEPULSE_API_KEY" {
				t.Errorf("%s names the setting %s", path, m)
			}
		}
		if m := event.FindString(text); m != "" {
			t.Errorf("%s shows the raw event id %s", path, m)
		}
		if strings.Contains(text, "xn--") {
			t.Errorf("%s shows a punycode domain", path)
		}
	}
	_, body := f.a.get("/sites/" + hand)
	if strings.Contains(body, "Scanned on publish") || !strings.Contains(body, "Scanned when you press Scan now") {
		t.Error("a site added by hand is said to be scanned on publish")
	}
	_, body = f.a.get("/workspaces/" + ws + "/notifications")
	contains(t, body, "Budget broken")
}

// TestPublishIsPromisedOnlyWhereItHappens: a site added by hand is never scanned on publish, so
// the empty home page and the add form's schedule hint do not promise it; the edit form of a
// site connected from the platform does.
func TestPublishIsPromisedOnlyWhereItHappens(t *testing.T) {
	eachBackend(t, 0, func(t *testing.T, f *uiFixture) {
		c := f.ts.browser(t)
		c.signup("c@example.com")
		_, home := c.get("/")
		contains(t, home, "No sites yet")
		if strings.Contains(home, "after every publish.") {
			t.Error("the empty home page promises a scan after every publish to a site added by hand")
		}
		_, form := f.a.get("/sites/new")
		hint := regexp.MustCompile(`(?s)<p class="hint" id="schedule-hint">.*?</p>`).FindString(form)
		if hint == "" || strings.Contains(hint, "publish") {
			t.Errorf("the add form's schedule hint speaks of publishes to a site added by hand: %q", hint)
		}
		_, edit := f.a.get("/sites/" + f.site + "/edit")
		hint = regexp.MustCompile(`(?s)<p class="hint" id="schedule-hint">.*?</p>`).FindString(edit)
		if !strings.Contains(hint, "on publish") {
			t.Errorf("the edit form of a site connected from the platform does not say it is scanned on publish: %q", hint)
		}
	})
}
