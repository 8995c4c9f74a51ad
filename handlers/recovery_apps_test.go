package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestRecoveryEndsTheIntrudersApps (issue 44, attack 3): an intruder who had the account's
// password, or one of its sessions, connects an OAuth app through the real flow (consent, code,
// PKCE, token). Signing out everywhere else, and a password reset, end the grants and refresh
// tokens issued since the last password change: the intruder's access token reads nothing and
// its refresh token mints nothing, while the app the owner connected before the change keeps
// working; the page and the reset's e-mail name the apps that were disconnected.
func TestRecoveryEndsTheIntrudersApps(t *testing.T) {
	eachOAuthBackend(t, func(t *testing.T, ot *oauthTest) {
		const cb = "http://127.0.0.1/callback"
		const changed = "a brand new passphrase"
		connect := func(b *browser, client string) (at, rt string) {
			t.Helper()
			path, verifier := authorizePath(client, cb, "st")
			return ot.exchange(t, b.answer(b.consent(path), "approve"), client, cb, verifier)
		}
		refresh := func(client, rt string) (status int, next string) {
			t.Helper()
			resp, body := ot.postForm(t, "/api/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client}})
			if i := strings.Index(body, `"refresh_token":"`); i >= 0 {
				next, _, _ = strings.Cut(body[i+len(`"refresh_token":"`):], `"`)
			}
			return resp.StatusCode, next
		}
		// ended says whether an app's tokens stopped working; a working refresh token is rotated.
		ended := func(client, at string, rt *string) bool {
			t.Helper()
			read, _ := ot.mcp(t, at)
			minted, next := refresh(client, *rt)
			if minted == http.StatusOK {
				*rt = next
			}
			if (read == http.StatusOK) != (minted == http.StatusOK) {
				t.Errorf("access token %d but refresh token %d: want both to work or neither", read, minted)
			}
			return read != http.StatusOK && minted != http.StatusOK
		}

		ann := ot.testServer.browser(t)
		ann.signup("ann@example.com")
		own := ot.register(t, "Ann's own app", cb)
		ownAT, ownRT := connect(ann, own)
		ot.advance(time.Minute)
		// Ann changes her password: what she connected before stays connected.
		resp, _ := ann.post("/settings/password", url.Values{"csrf_token": {ann.csrf}, "current_password": {testPassword}, "new_password": {changed}})
		wantStatus(t, resp, http.StatusSeeOther)
		ann.mail.next(t, "ann@example.com")
		ann.refreshCSRF()
		ot.advance(time.Minute)

		// The intruder signs in with the password it learnt and connects its app.
		evil := ot.register(t, "Intruder's app", cb)
		intruder := ot.testServer.browser(t)
		intruder.login("ann@example.com", changed)
		evilAT, evilRT := connect(intruder, evil)
		if ended(evil, evilAT, &evilRT) {
			t.Fatal("the intruder's app does not work before anything was done")
		}
		ot.advance(time.Minute)

		t.Run("sign out everywhere else", func(t *testing.T) {
			ann := ann.in(t)
			resp, body := ann.postFollow("/settings/sessions/end-others", url.Values{"csrf_token": {ann.csrf}})
			wantStatus(t, resp, http.StatusOK)
			if !ended(evil, evilAT, &evilRT) {
				t.Error("after signing out everywhere else the intruder's app still reads the sites or refreshes its token")
			}
			if ended(own, ownAT, &ownRT) {
				t.Error("the app connected before the last password change was disconnected too")
			}
			contains(t, body, "Intruder&#39;s app")
			if strings.Contains(body, "Ann&#39;s own app</strong> was disconnected") {
				t.Error("the page says Ann's own app was disconnected")
			}
		})

		t.Run("password reset", func(t *testing.T) {
			ot.advance(time.Minute)
			intruder := ot.testServer.browser(t)
			intruder.login("ann@example.com", changed)
			evilAT, evilRT := connect(intruder, evil)
			ot.advance(time.Minute)
			reset := ann.in(t).forgot("ann@example.com")
			anon := ot.testServer.browser(t)
			_, page := anon.get(reset)
			csrf := csrfRe.FindStringSubmatch(page)
			form := url.Values{"password": {"the owner's own again"}}
			if csrf != nil {
				form.Set("csrf_token", csrf[1])
			}
			resp, _ := anon.post(reset, form)
			wantStatus(t, resp, http.StatusSeeOther)
			if !ended(evil, evilAT, &evilRT) {
				t.Error("after a password reset the intruder's app still reads the sites or refreshes its token")
			}
			if ended(own, ownAT, &ownRT) {
				t.Error("the reset disconnected the app connected before the last password change")
			}
			m := anon.mail.next(t, "ann@example.com")
			if !strings.Contains(m.body, "Intruder's app") || strings.Contains(m.body, "Ann's own app") {
				t.Errorf("the reset's e-mail should name the app it disconnected, and only it:\n%s", m.body)
			}
		})
	})
}
