package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// Handler tests of every account route (issue 34 item 5): "Forgot password" and its link, the
// password, e-mail, sessions and delete forms of the settings page, the e-mail change link.
// Each checks the error shapes (pages with a status), CSRF, the throttle, another account's
// session, the links' single use and expiry on the fake clock, and the sessions ended.

var (
	resetLinkRe = regexp.MustCompile(`http://sitepulse\.test(/password/reset/rst_[A-Za-z0-9_-]+)`)
	emailLinkRe = regexp.MustCompile(`http://sitepulse\.test(/email/confirm/eml_[A-Za-z0-9_-]+)`)
)

// linkIn is the path of the link re finds in a message.
func linkIn(t testing.TB, re *regexp.Regexp, m sentMail) string {
	t.Helper()
	l := re.FindStringSubmatch(m.body)
	if l == nil {
		t.Fatalf("no link in %q", m.body)
	}
	return l[1]
}

// signedIn answers whether the browser's session still works.
func (b *browser) signedIn() bool {
	b.t.Helper()
	resp, _ := b.get("/settings")
	return resp.StatusCode == http.StatusOK
}

// login signs b in with a password and remembers its CSRF token.
func (b *browser) login(email, password string) {
	b.t.Helper()
	resp, _ := b.post("/login", url.Values{"email": {email}, "password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("login %s: %d", email, resp.StatusCode)
	}
	b.refreshCSRF()
}

// forgot asks for a reset link for email as b and answers the link e-mailed.
func (b *browser) forgot(email string) string {
	b.t.Helper()
	resp, _ := b.post("/password/forgot", url.Values{"email": {email}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("forgot: %d", resp.StatusCode)
	}
	return linkIn(b.t, resetLinkRe, b.mail.next(b.t, store.CanonicalEmail(email)))
}

// cookie is the value of the browser's cookie name, "" when it has none.
func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// annTwiceAndBob signs ann up in one browser and in again in another, and bob up in a third.
func annTwiceAndBob(t *testing.T, ts *testServer) (ann, annElsewhere, bob *browser) {
	t.Helper()
	ann, annElsewhere, bob = ts.browser(t), ts.browser(t), ts.browser(t)
	ann.signup("ann@example.com")
	annElsewhere.login("ann@example.com", testPassword)
	bob.signup("bob@example.com")
	return ann, annElsewhere, bob
}

func TestForgotPasswordAnswersAlike(t *testing.T) {
	ts := newTestServer(t, storetest.Backends(t)[0].Open(t))
	ts.browser(t).signup("ann@example.com")
	anon := ts.browser(t)
	resp, body := anon.get("/login")
	contains(t, body, `href="/password/forgot"`)
	resp, _ = anon.get("/password/forgot")
	wantStatus(t, resp, http.StatusOK)

	answer := func(email string) (int, string, int) {
		resp, _ := anon.post("/password/forgot", url.Values{"email": {email}})
		return resp.StatusCode, resp.Header.Get("Location"), len(resp.Cookies())
	}
	ks, kl, kc := answer("ann@example.com")
	ns, nl, nc := answer("nobody@example.com")
	if ks != http.StatusSeeOther || ks != ns || kl != nl || kl != "/password/forgot?sent=1" || kc+nc != 0 {
		t.Errorf("known: %d %q %d cookies; unknown: %d %q %d cookies; want the same 303 to /password/forgot?sent=1, no cookie", ks, kl, kc, ns, nl, nc)
	}
	resp, body = anon.get(kl)
	wantStatus(t, resp, http.StatusOK)
	contains(t, body, "If an account uses that address")
	if m := anon.mail.next(t, "ann@example.com"); !resetLinkRe.MatchString(m.body) || !strings.Contains(m.body, "within an hour") {
		t.Errorf("the reset message: %q", m.body)
	}
	for _, bad := range []string{"", "not an address", "Ann <ann@example.com>", strings.Repeat("a", 250) + "@x.io"} {
		resp, body := anon.post("/password/forgot", url.Values{"email": {bad}})
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		contains(t, body, "like name@example.com")
	}
}

// A reset link works once, for an hour; using it ends every session of the account, this
// browser's included, and only the newest link of an account works.
func TestResetLink(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServer(t, be.Open(t))
			home, laptop, bob := annTwiceAndBob(t, ts)

			anon := ts.browser(t)
			older := anon.forgot("ann@example.com")
			link := anon.forgot("ANN@example.com")
			resp, _ := anon.get(older)
			wantStatus(t, resp, http.StatusNotFound) // replaced by the newer one
			resp, body := anon.get(link)
			wantStatus(t, resp, http.StatusOK)
			contains(t, body, `action="`+link+`"`)
			if resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("the link's page: Referrer-Policy %q, Cache-Control %q", resp.Header.Get("Referrer-Policy"), resp.Header.Get("Cache-Control"))
			}
			resp, body = anon.post(link, url.Values{"password": {"12345678"}})
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, "most common passwords")

			resp, _ = laptop.post(link, url.Values{"password": {"a brand new passphrase"}})
			wantStatus(t, resp, http.StatusSeeOther)
			if got := resp.Header.Get("Location"); got != "/login?done=password-reset" {
				t.Errorf("after the reset: to %q", got)
			}
			if home.signedIn() || laptop.signedIn() {
				t.Error("a session of the account outlived the reset")
			}
			if !bob.signedIn() {
				t.Error("another account's session ended")
			}
			if m := anon.mail.next(t, "ann@example.com"); !strings.Contains(m.subject, "password was changed") {
				t.Errorf("the notice: %q", m.subject)
			}
			_, body = anon.get("/login?done=password-reset")
			contains(t, body, "every session of the account was ended")
			resp, _ = anon.post(link, url.Values{"password": {"yet another passphrase"}})
			wantStatus(t, resp, http.StatusGone)
			resp, _ = anon.get(link)
			wantStatus(t, resp, http.StatusGone)
			h := ts.Config.Handler
			if got := loginWith(h, "198.51.100.1:1", "ann@example.com", testPassword).Code; got != http.StatusUnauthorized {
				t.Errorf("the old password: %d", got)
			}
			if got := loginWith(h, "198.51.100.1:1", "ann@example.com", "a brand new passphrase").Code; got != http.StatusSeeOther {
				t.Errorf("the new password: %d", got)
			}

			// An hour, on the fake clock (and an hour first: the address had its 3 account
			// messages, the sign-up link and two reset links; then one an hour).
			ts.now = ts.now.Add(time.Hour)
			link = anon.forgot("ann@example.com")
			ts.now = ts.now.Add(time.Hour - time.Second)
			resp, _ = anon.get(link)
			wantStatus(t, resp, http.StatusOK)
			ts.now = ts.now.Add(time.Second)
			resp, body = anon.post(link, url.Values{"password": {"too late passphrase"}})
			wantStatus(t, resp, http.StatusGone)
			contains(t, body, "Ask for a new one")
			for _, bad := range []string{"/password/reset/rst_never-issued", "/password/reset/" + strings.TrimPrefix(link, "/password/reset/rst_"), "/password/reset/rst_" + strings.Repeat("x", 300)} {
				resp, _ := anon.post(bad, url.Values{"password": {"a fine new password"}})
				wantStatus(t, resp, http.StatusNotFound)
			}
		})
	}
}

// A password reset ends the account's device cookies: they are bound to the password, so a
// browser that signed in before the reset is counted against the account's failed-login cap
// like any other, and the one that logs in with the new password gets a fresh one.
func TestResetEndsDeviceCookies(t *testing.T) {
	ts := newTestServerWith(t, storetest.Backends(t)[0].Open(t), func(d *Deps) {
		d.AccountLogins = store.LoginLimit{Burst: 3, Window: 24 * time.Hour, Every: time.Hour}
	})
	h := ts.Config.Handler
	ts.browser(t).signup("ann@example.com")
	old := deviceCookie(loginWith(h, "198.51.100.1:1", "ann@example.com", testPassword))
	anon := ts.browser(t)
	resp, _ := anon.post(anon.forgot("ann@example.com"), url.Values{"password": {"a brand new passphrase"}})
	wantStatus(t, resp, http.StatusSeeOther)
	for i := range 3 {
		if got := loginWith(h, fmt.Sprintf("203.0.113.%d:1", i+1), "ann@example.com", "guess guess").Code; got != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, got)
		}
	}
	if got := loginWith(h, "198.51.100.2:1", "ann@example.com", "a brand new passphrase", old).Code; got != http.StatusTooManyRequests {
		t.Errorf("a device cookie from before the reset past the cap: %d, want 429 (it no longer counts)", got)
	}
}

// "Forgot password" is throttled like login: per requesting address (10, then one every 6
// minutes), and an e-mail address gets 3 account messages, then one an hour, whoever asks;
// past that the answer is the same and nothing is sent (the last link keeps working).
func TestForgotPasswordThrottle(t *testing.T) {
	ts := newTestServer(t, storetest.Backends(t)[0].Open(t))
	ts.browser(t).signup("ann@example.com") // 1 account message: the sign-up link
	anon := ts.browser(t)
	link := anon.forgot("ann@example.com")
	link = anon.forgot("ann@example.com") // the third account message today
	resp, _ := anon.post("/password/forgot", url.Values{"email": {"ann@example.com"}})
	wantStatus(t, resp, http.StatusSeeOther)
	resp, _ = anon.get(link)
	wantStatus(t, resp, http.StatusOK) // no newer link replaced it: nothing was sent
	ts.now = ts.now.Add(time.Hour)
	fresh := anon.forgot("ann@example.com") // an hour later, one more
	resp, _ = anon.get(link)
	wantStatus(t, resp, http.StatusNotFound)
	resp, _ = anon.get(fresh)
	wantStatus(t, resp, http.StatusOK)

	// Per requesting address: 10 requests that mail, then one every 6 minutes. The hour refilled
	// the bucket, and the last request above took one.
	var codes []int
	for i := range 9 {
		resp, _ := anon.post("/password/forgot", url.Values{"email": {fmt.Sprintf("p%d@example.com", i)}})
		codes = append(codes, resp.StatusCode)
	}
	resp, body := anon.post("/password/forgot", url.Values{"email": {"ann@example.com"}})
	codes = append(codes, resp.StatusCode)
	if codes[len(codes)-2] != http.StatusSeeOther || codes[len(codes)-1] != http.StatusTooManyRequests {
		t.Fatalf("codes %v, want nine 303 then 429", codes)
	}
	contains(t, body, "Too many attempts")
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
}

func TestChangePassword(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServer(t, be.Open(t))
			ann, laptop, bob := annTwiceAndBob(t, ts)
			form := func(csrf, current, next string) url.Values {
				return url.Values{"csrf_token": {csrf}, "current_password": {current}, "new_password": {next}}
			}

			// CSRF: none, and another account's.
			resp, _ := ann.post("/settings/password", form("", testPassword, "a brand new passphrase"))
			wantStatus(t, resp, http.StatusForbidden)
			resp, _ = ann.post("/settings/password", form(bob.csrf, testPassword, "a brand new passphrase"))
			wantStatus(t, resp, http.StatusForbidden)
			resp, body := ann.post("/settings/password", form(ann.csrf, "not my password", "a brand new passphrase"))
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, wrongPassword)
			resp, body = ann.post("/settings/password", form(ann.csrf, testPassword, "password"))
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, "most common passwords")

			oldCookie := ann.cookie("session")
			resp, _ = ann.post("/settings/password", form(ann.csrf, testPassword, "a brand new passphrase"))
			wantStatus(t, resp, http.StatusSeeOther)
			if got := resp.Header.Get("Location"); got != "/settings?done=password-changed#account" {
				t.Errorf("to %q", got)
			}
			if !ann.signedIn() || ann.cookie("session") == oldCookie {
				t.Error("this browser is not signed in with a fresh session id")
			}
			if laptop.signedIn() {
				t.Error("the other session outlived the change")
			}
			if !bob.signedIn() {
				t.Error("another account's session ended")
			}
			stale := ts.browser(t)
			u, _ := url.Parse(ts.URL)
			stale.c.Jar.SetCookies(u, []*http.Cookie{{Name: "session", Value: oldCookie}})
			if stale.signedIn() {
				t.Error("the session id from before the change still works")
			}
			if m := ann.mail.next(t, "ann@example.com"); !strings.Contains(m.subject, "password was changed") {
				t.Errorf("the notice: %q", m.subject)
			}
			_, body = ann.get("/settings?done=password-changed")
			contains(t, body, "Every other session")
			h := ts.Config.Handler
			if got := loginWith(h, "198.51.100.1:1", "ann@example.com", "a brand new passphrase").Code; got != http.StatusSeeOther {
				t.Errorf("the new password: %d", got)
			}

			// Throttled like login: 10 wrong passwords from one address, then 429.
			ann.refreshCSRF()
			var codes []int
			for range 11 {
				resp, _ := ann.post("/settings/password", form(ann.csrf, "guess guess", "a third passphrase"))
				codes = append(codes, resp.StatusCode)
			}
			if codes[9] != http.StatusUnprocessableEntity || codes[10] != http.StatusTooManyRequests {
				t.Errorf("codes %v, want 422s then 429", codes)
			}
		})
	}
}

func TestChangeEmail(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServer(t, be.Open(t))
			ann, bob := ts.browser(t), ts.browser(t)
			ann.signup("ann@example.com")
			bob.signup("bob@example.com")
			change := func(b *browser, email, password string) (*http.Response, string) {
				return b.post("/settings/email", url.Values{"csrf_token": {b.csrf}, "email": {email}, "current_password": {password}})
			}
			resp, _ := ann.post("/settings/email", url.Values{"email": {"new@example.com"}, "current_password": {testPassword}})
			wantStatus(t, resp, http.StatusForbidden)
			resp, body := change(ann, "new@example.com", "not my password")
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, wrongPassword)
			contains(t, body, `value="new@example.com"`)
			for bad, want := range map[string]string{"not an address": "like name@example.com", "ANN@example.com": "already your account"} {
				resp, body := change(ann, bad, testPassword)
				wantStatus(t, resp, http.StatusUnprocessableEntity)
				contains(t, body, want)
			}

			resp, _ = change(ann, "New@Example.com", testPassword)
			wantStatus(t, resp, http.StatusSeeOther)
			if got := resp.Header.Get("Location"); got != "/settings?done=email-sent#account" {
				t.Errorf("to %q", got)
			}
			link := linkIn(t, emailLinkRe, ann.mail.next(t, "new@example.com"))
			if m := ann.mail.next(t, "ann@example.com"); !strings.Contains(m.body, "new@example.com") || !strings.Contains(m.body, "cancels it") {
				t.Errorf("the old address's notice: %q", m.body)
			}
			anon := ts.browser(t)
			resp, body = anon.get(link)
			wantStatus(t, resp, http.StatusOK)
			contains(t, body, "new@example.com")
			if resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Error("the link's page sends a Referer")
			}
			if _, err := ts.store.UserByEmail(context.Background(), "new@example.com"); err == nil {
				t.Fatal("a GET of the link changed the address")
			}
			resp, _ = anon.post(link, url.Values{})
			wantStatus(t, resp, http.StatusSeeOther)
			if got := resp.Header.Get("Location"); got != "/login?done=email-changed" {
				t.Errorf("to %q", got)
			}
			if m := ann.mail.next(t, "ann@example.com"); !strings.Contains(m.subject, "was changed") || !strings.Contains(m.body, "new@example.com") {
				t.Errorf("the old address's second notice: %q %q", m.subject, m.body)
			}
			resp, _ = anon.post(link, url.Values{})
			wantStatus(t, resp, http.StatusGone)
			h := ts.Config.Handler
			if got := loginWith(h, "198.51.100.1:1", "new@example.com", testPassword).Code; got != http.StatusSeeOther {
				t.Errorf("login with the new address: %d", got)
			}
			if got := loginWith(h, "198.51.100.1:1", "ann@example.com", testPassword).Code; got != http.StatusUnauthorized {
				t.Errorf("login with the old address: %d", got)
			}
			if !ann.signedIn() {
				t.Error("the change signed the account out")
			}

			// An address another account has: the same answer; that address is told nothing changed.
			ann.refreshCSRF()
			resp, _ = change(ann, "bob@example.com", testPassword)
			wantStatus(t, resp, http.StatusSeeOther)
			if m := ann.mail.next(t, "bob@example.com"); !strings.Contains(m.body, "Nothing was changed") || emailLinkRe.MatchString(m.body) {
				t.Errorf("the taken address's message: %q", m.body)
			}
			ann.mail.next(t, "new@example.com") // the notice

			// Taken between the request and the link: 409, nothing changed.
			resp, _ = change(ann, "carl@example.com", testPassword)
			wantStatus(t, resp, http.StatusSeeOther)
			link = linkIn(t, emailLinkRe, ann.mail.next(t, "carl@example.com"))
			ann.mail.next(t, "new@example.com")
			ts.browser(t).signup("carl@example.com")
			resp, body = anon.post(link, url.Values{})
			wantStatus(t, resp, http.StatusConflict)
			contains(t, body, "nothing was changed")

			// A day, on the fake clock.
			resp, _ = change(ann, "dora@example.com", testPassword)
			wantStatus(t, resp, http.StatusSeeOther)
			link = linkIn(t, emailLinkRe, ann.mail.next(t, "dora@example.com"))
			ts.now = ts.now.Add(store.EmailLinkTTL)
			resp, _ = anon.post(link, url.Values{})
			wantStatus(t, resp, http.StatusGone)
			resp, _ = anon.get("/email/confirm/eml_never-issued")
			wantStatus(t, resp, http.StatusNotFound)
		})
	}
}

func TestSignOutEverywhereElse(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServer(t, be.Open(t))
			ann, laptop, bob := annTwiceAndBob(t, ts)
			_, body := ann.get("/settings")
			if n := strings.Count(body, "this browser</span>"); n != 1 || strings.Count(body, "another browser") != 1 {
				t.Errorf("the sessions list: %d this browser, %d another; want 1 and 1", n, strings.Count(body, "another browser"))
			}
			resp, _ := ann.post("/settings/sessions/end-others", url.Values{})
			wantStatus(t, resp, http.StatusForbidden)
			resp, _ = ann.post("/settings/sessions/end-others", url.Values{"csrf_token": {bob.csrf}})
			wantStatus(t, resp, http.StatusForbidden)
			if !laptop.signedIn() {
				t.Fatal("a refused request ended a session")
			}
			resp, _ = ann.post("/settings/sessions/end-others", url.Values{"csrf_token": {ann.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)
			if laptop.signedIn() || !ann.signedIn() || !bob.signedIn() {
				t.Errorf("after signing out everywhere else: laptop %v, this browser %v, another account %v; want false, true, true",
					laptop.signedIn(), ann.signedIn(), bob.signedIn())
			}
			_, body = ann.get("/settings?done=sessions-ended")
			contains(t, body, "only one signed in")
		})
	}
}

func TestDeleteAccount(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			ts := newTestServer(t, st)
			ann, bob := ts.browser(t), ts.browser(t)
			ann.signup("ann@example.com")
			bob.signup("bob@example.com")
			resp, _ := ann.post("/sites", url.Values{"csrf_token": {ann.csrf}, "name": {"Ann's shop"}, "domain": {"shop.ann.test"}})
			wantStatus(t, resp, http.StatusSeeOther)
			resp, body := ann.postFollow("/settings/api-keys", url.Values{"csrf_token": {ann.csrf}, "name": {"ci"}})
			wantStatus(t, resp, http.StatusOK)
			key := regexp.MustCompile(`value="(svc_[A-Za-z0-9_-]+)"`).FindStringSubmatch(body)[1]
			agency := ann.workspaceOf("Agency")
			resp, _ = bob.post(ann.invite(agency, "bob@example.com", "editor"), url.Values{"csrf_token": {bob.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)
			del := func(b *browser, csrf, password string) (*http.Response, string) {
				return b.post("/settings/delete", url.Values{"csrf_token": {csrf}, "current_password": {password}})
			}

			resp, _ = del(ann, "", testPassword)
			wantStatus(t, resp, http.StatusForbidden)
			resp, _ = del(ann, bob.csrf, testPassword)
			wantStatus(t, resp, http.StatusForbidden)
			resp, body = del(ann, ann.csrf, "not my password")
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, wrongPassword)
			// Agency has another member and ann is its only owner: refused, saying which.
			resp, body = del(ann, ann.csrf, testPassword)
			wantStatus(t, resp, http.StatusConflict)
			contains(t, body, "was not deleted")
			contains(t, body, `<a href="`+agency+`">Agency</a>`)
			if !ann.signedIn() {
				t.Fatal("a refused deletion signed the account out")
			}

			resp, _ = ann.post(agency+"/members/"+ts.storeUser(t, "bob@example.com")+"/remove", url.Values{"csrf_token": {ann.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)
			_, body = ann.get("/settings")
			contains(t, body, "<strong class=\"break\">Agency</strong>")
			resp, _ = del(ann, ann.csrf, testPassword)
			wantStatus(t, resp, http.StatusSeeOther)
			if got := resp.Header.Get("Location"); got != "/login?done=account-deleted" {
				t.Errorf("to %q", got)
			}
			if ann.signedIn() {
				t.Error("the deleted account's session still works")
			}
			if !bob.signedIn() {
				t.Error("another account's session ended")
			}
			req, _ := http.NewRequest("POST", ts.URL+"/api/external/budget-check", strings.NewReader(`{"siteId":"`+store.NewID()+`"}`))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			r2, err := http.DefaultClient.Do(req)
			must(t, err)
			r2.Body.Close()
			wantStatus(t, r2, http.StatusUnauthorized)
			if m := ann.mail.next(t, "ann@example.com"); !strings.Contains(m.subject, "was deleted") {
				t.Errorf("the notice: %q", m.subject)
			}

			// The address signs up again, to an empty account.
			again := ts.browser(t)
			again.signup("ann@example.com")
			_, body = again.get("/")
			if strings.Contains(body, "Ann&#39;s shop") || strings.Contains(body, "Agency") {
				t.Error("the new account sees the deleted one's sites or workspaces")
			}
		})
	}
}

// The e-mailed links' paths are redacted from the access log at every level, and with SMTP set
// no message text, so no link, is logged at all.
func TestAccountLinksRedactedFromLogs(t *testing.T) {
	var logs scantest.LogBuffer
	mail := &mailCounter{}
	ts := newTestServerWith(t, storetest.Backends(t)[0].Open(t), func(d *Deps) {
		d.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		d.Mail = mail.send
	})
	b := ts.browser(t)
	b.mail = nil
	resp, _ := b.post("/signup", url.Values{"email": {"ann@example.com"}})
	wantStatus(t, resp, http.StatusSeeOther)
	signup := signupLink(t, mail.to(t, "ann@example.com", 1)[0])
	b.confirm(mail.to(t, "ann@example.com", 1)[0], testPassword)
	b.refreshCSRF()
	resp, _ = b.post("/password/forgot", url.Values{"email": {"ann@example.com"}})
	wantStatus(t, resp, http.StatusSeeOther)
	reset := linkIn(t, resetLinkRe, mail.to(t, "ann@example.com", 2)[1])
	resp, _ = b.post("/settings/email", url.Values{"csrf_token": {b.csrf}, "email": {"new@example.com"}, "current_password": {testPassword}})
	wantStatus(t, resp, http.StatusSeeOther)
	email := linkIn(t, emailLinkRe, mail.to(t, "new@example.com", 1)[0])
	for _, link := range []string{signup, reset, email, "/" + strings.TrimPrefix(reset, "/"), "/x/.." + reset} {
		b.get(link)
	}
	for _, link := range []string{signup, reset, email} {
		token := link[strings.LastIndex(link, "/")+1:]
		if strings.Contains(logs.String(), token) {
			t.Errorf("a token of %s is in the log", link[:strings.LastIndex(link, "/")])
		}
	}
	for _, prefix := range []string{"/signup/confirm/[redacted]", "/password/reset/[redacted]", "/email/confirm/[redacted]"} {
		if !strings.Contains(logs.String(), prefix) {
			t.Errorf("no %s line in the access log", prefix)
		}
	}
}

// Without SMTP the account messages are the log's: a server with no e-mail stays usable (the
// sign-up and reset links are read there), and it says so once, at start.
func TestAccountMailWithoutSMTPIsLogged(t *testing.T) {
	var logs scantest.LogBuffer
	st := storetest.Backends(t)[0].Open(t)
	// withServers would put the tests' outbox in place of a nil Mail.
	d := withStore(st, Deps{BaseURL: "http://sitepulse.test", PasswordIterations: 1000, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	d.OAuth = oauth.New(oauth.Config{Store: st, BaseURL: d.BaseURL})
	d.MCP = mcp.New(mcp.Config{Sites: st, Scans: st, Writes: st, BaseURL: d.BaseURL})
	h, err := NewHandler(d)
	must(t, err)
	if !strings.Contains(logs.String(), "SMTP_ADDR not set: account e-mails") {
		t.Errorf("no warning at start: %s", logs.String())
	}
	rec := newRecorder(h, "POST", "/signup", "email=ann%40example.com")
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-up without SMTP: %d, want 303", rec.Code)
	}
	if sent := newRecorder(h, "GET", rec.Header().Get("Location"), ""); !strings.Contains(sent.Body.String(), "the message is in its log") {
		t.Fatalf("the page after sign-up without SMTP: %d %.300s", sent.Code, sent.Body.String())
	}
	if !regexp.MustCompile(`level=INFO msg="e-mail \(SMTP_ADDR not set, so logged instead of sent\)".*signup/confirm/[A-Za-z0-9_-]+`).MatchString(logs.String()) {
		t.Errorf("the sign-up link is not in the log at INFO: %s", logs.String())
	}
}
