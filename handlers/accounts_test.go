package handlers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
)

func TestSignupLoginLogout(t *testing.T) {
	ts := newTestServer(t, memory.New())
	b := ts.browser(t)

	resp, _ := b.get("/settings")
	wantStatus(t, resp, http.StatusSeeOther)
	if got := resp.Header.Get("Location"); got != "/login?next=%2Fsettings" {
		t.Errorf("signed-out redirect to %q", got)
	}

	b.signup("ann@example.com")
	resp, body := b.get("/")
	wantStatus(t, resp, http.StatusOK)
	contains(t, body, "Log out")

	var cookie *http.Cookie
	u, _ := url.Parse(ts.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "session" {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie")
	}
	resp, _ = b.post("/signup", url.Values{"email": {"ANN@example.com"}, "password": {"another password"}})
	wantStatus(t, resp, http.StatusSeeOther) // as for a new e-mail; the owner is told by e-mail
	if m := b.mail.next(t, "ann@example.com"); !strings.Contains(m.body, "already has one") {
		t.Errorf("the owner's message: %q", m.body)
	}

	resp, _ = b.post("/logout", url.Values{"csrf_token": {b.csrf}})
	wantStatus(t, resp, http.StatusSeeOther)
	// The old session is dead server-side, even for a client that kept the cookie.
	stale := &browser{t: t, base: ts.URL, c: &http.Client{CheckRedirect: b.c.CheckRedirect}}
	req, _ := http.NewRequest("GET", ts.URL+"/settings", nil)
	req.AddCookie(&http.Cookie{Name: "session", Value: cookie.Value})
	r2, err := stale.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	wantStatus(t, r2, http.StatusSeeOther)

	resp, body = b.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"wrong password"}})
	wantStatus(t, resp, http.StatusUnauthorized)
	contains(t, body, "do not match an account")
	resp, _ = b.post("/login", url.Values{"email": {"Ann@Example.com"}, "password": {"correct horse battery"}, "next": {"/settings"}})
	wantStatus(t, resp, http.StatusSeeOther)
	if got := resp.Header.Get("Location"); got != "/settings" {
		t.Errorf("login went to %q", got)
	}
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "session" && c.Value == cookie.Value {
			t.Error("login reused the old session id")
		}
	}
}

func TestSessionCookieAttributes(t *testing.T) {
	for _, tt := range []struct{ base, name string }{{"http://sitepulse.test", "session"}, {"https://sitepulse.test", "__Host-session"}} {
		st := memory.New()
		h, err := NewHandler(withServers(st, Deps{BaseURL: tt.base, PasswordIterations: 1000}))
		if err != nil {
			t.Fatal(err)
		}
		hash, _ := store.HashPassword("long enough pw", 1000)
		if err := st.CreateUser(t.Context(), store.User{ID: store.NewID(), Email: "a@example.com", PasswordHash: hash}); err != nil {
			t.Fatal(err)
		}
		rec := newRecorder(h, "POST", "/login", "email=a%40example.com&password=long+enough+pw")
		set := rec.Header().Get("Set-Cookie")
		for _, want := range []string{tt.name + "=", "Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=2592000"} {
			if !strings.Contains(set, want) {
				t.Errorf("%s: Set-Cookie %q lacks %q", tt.base, set, want)
			}
		}
		if secure := strings.Contains(set, "Secure"); secure != strings.HasPrefix(tt.base, "https") {
			t.Errorf("%s: Secure = %v", tt.base, secure)
		}
	}
}

func TestLoginThrottle(t *testing.T) {
	ts := newTestServer(t, memory.New())
	b := ts.browser(t)
	b.signup("ann@example.com")
	other := ts.browser(t)
	var codes []int
	for i := 0; i < 11; i++ {
		resp, _ := other.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"guess guess"}})
		codes = append(codes, resp.StatusCode)
	}
	if codes[9] != http.StatusUnauthorized || codes[10] != http.StatusTooManyRequests {
		t.Errorf("codes = %v, want ten 401 then 429", codes)
	}
	resp, body := other.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"correct horse battery"}})
	wantStatus(t, resp, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	contains(t, body, "Too many attempts")
	if strings.Contains(body, "ann@example.com\" autofocus") && strings.Contains(body, "no account") {
		t.Error("throttle message reveals the account")
	}
}

// loginFrom posts a login from an injected client address.
func loginFrom(h http.Handler, addr, email, password string) int {
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"email": {email}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = addr
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// The throttle's token is taken before the password check, so 30 parallel guesses at one
// account get 10 checks; and it counts per (account, address) and per address, so the owner
// still gets in from elsewhere, and one address cannot spray many accounts.
func TestLoginThrottleIsAtomicAndPerAddress(t *testing.T) {
	ts := newTestServer(t, memory.New())
	ts.browser(t).signup("ann@example.com")
	h := ts.Config.Handler
	const attacker = "203.0.113.9:4000"
	codes := make(chan int, 30)
	var wg sync.WaitGroup
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- loginFrom(h, attacker, "ann@example.com", "guess guess")
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[http.StatusUnauthorized] != 10 || count[http.StatusTooManyRequests] != 20 {
		t.Errorf("parallel guesses: %v, want 10 checked (401) and 20 refused (429)", count)
	}
	if got := loginFrom(h, attacker, "ann@example.com", "correct horse battery"); got != http.StatusTooManyRequests {
		t.Errorf("attacker's address, right password: %d, want 429", got)
	}
	if got := loginFrom(h, "198.51.100.7:5000", "ann@example.com", "correct horse battery"); got != http.StatusSeeOther {
		t.Errorf("owner from another address: %d, want 303", got)
	}
	const sprayer = "203.0.113.50:4000"
	var last int
	for i := range 21 {
		last = loginFrom(h, sprayer, fmt.Sprintf("user%d@example.com", i), "guess guess")
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("21st account guessed from one address: %d, want 429", last)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/settings": "/settings", "//evil.example": "/", "/\\evil.example": "/", "https://evil.example/": "/",
		"settings": "/", "/oauth/authorize?client_id=c_1&state=x": "/oauth/authorize?client_id=c_1&state=x",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

var keyRe = regexp.MustCompile(`svc_[A-Za-z0-9_-]{43}`)

func TestAPIKeys(t *testing.T) {
	ts := newTestServer(t, memory.New())
	b := ts.browser(t)
	b.signup("ann@example.com")

	resp, body := b.postFollow("/settings/api-keys", url.Values{"csrf_token": {b.csrf}, "name": {"GitHub Actions"}})
	wantStatus(t, resp, http.StatusOK)
	key := keyRe.FindString(body)
	if key == "" {
		t.Fatalf("new key not shown: %.500s", body)
	}
	contains(t, body, "shown only once")

	_, body = b.get("/settings")
	if strings.Contains(body, key) {
		t.Error("the key is shown a second time")
	}
	contains(t, body, "GitHub Actions")
	contains(t, body, key[:12]+"…")
	k, err := ts.store.APIKeyByHash(t.Context(), store.HashSecret(key), ts.now)
	if err != nil {
		t.Fatalf("key not stored by hash: %v", err)
	}

	if k.Scope != store.ScopeRead {
		t.Errorf("a key made without ticking \"may publish reports\" has scope %q, want %q", k.Scope, store.ScopeRead)
	}
	_, body = b.postFollow("/settings/api-keys", url.Values{"csrf_token": {b.csrf}, "name": {"Reporter"}, "publish": {"on"}})
	if pk, err := ts.store.APIKeyByHash(t.Context(), store.HashSecret(keyRe.FindString(body)), ts.now); err != nil || pk.Scope != store.ScopeAll {
		t.Errorf("a key made with \"may publish reports\" ticked: scope %q, %v; want %q", pk.Scope, err, store.ScopeAll)
	}

	resp, body = b.post("/settings/api-keys", url.Values{"csrf_token": {b.csrf}, "name": {"  "}})
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	contains(t, body, "Give the key a name")

	// Another user cannot revoke it.
	eve := ts.browser(t)
	eve.signup("eve@example.com")
	resp, _ = eve.post("/settings/api-keys/"+k.ID+"/revoke", url.Values{"csrf_token": {eve.csrf}})
	wantStatus(t, resp, http.StatusNotFound)

	resp, _ = b.post("/settings/api-keys/"+k.ID+"/revoke", url.Values{"csrf_token": {b.csrf}})
	wantStatus(t, resp, http.StatusSeeOther)
	if _, err := ts.store.APIKeyByHash(t.Context(), store.HashSecret(key), ts.now); err == nil {
		t.Error("revoked key still works")
	}
	_, body = b.get("/settings?done=key-revoked")
	contains(t, body, "API key revoked")
	_, body = b.get("/settings?done=<script>")
	if strings.Contains(body, "<script>") {
		t.Error("flash reflects the query")
	}
}

func TestNotificationsSetting(t *testing.T) {
	ts := newTestServer(t, memory.New())
	b := ts.browser(t)
	b.signup("ann@example.com")
	resp, _ := b.post("/settings/notifications", url.Values{"csrf_token": {b.csrf}})
	wantStatus(t, resp, http.StatusSeeOther)
	u, _ := ts.store.UserByEmail(t.Context(), "ann@example.com")
	if u.NotifyRegressions {
		t.Error("notifications still on")
	}
	b.post("/settings/notifications", url.Values{"csrf_token": {b.csrf}, "notify_regressions": {"on"}})
	u, _ = ts.store.UserByEmail(t.Context(), "ann@example.com")
	if !u.NotifyRegressions {
		t.Error("notifications still off")
	}
}

// Bad input on every route of the foundation gets a clear 4xx, never a 500.
func TestBadInput(t *testing.T) {
	ts := newTestServer(t, memory.New())
	b := ts.browser(t)
	b.signup("ann@example.com")
	big := strings.Repeat("a", 10<<20)
	routes := []string{"/signup", "/login", "/logout", "/settings/api-keys", "/settings/api-keys/x/revoke", "/settings/notifications"}
	cases := []struct {
		name string
		body string
		ct   string
		auth bool
	}{
		{"an empty form", "", "application/x-www-form-urlencoded", true},
		{"a 10 MB body", "email=" + big, "application/x-www-form-urlencoded", true},
		{"a bad CSRF token", "csrf_token=nope&name=x&email=a&password=b", "application/x-www-form-urlencoded", true},
		{"an unknown session", "csrf_token=x", "application/x-www-form-urlencoded", false},
		{"a broken form encoding", "%zz=%%", "application/x-www-form-urlencoded", true},
		{"JSON instead of a form", `{"email":"a"}`, "application/json", true},
	}
	for _, route := range routes {
		for _, c := range cases {
			t.Run(route+" with "+c.name, func(t *testing.T) {
				req, _ := http.NewRequest("POST", ts.URL+route, strings.NewReader(c.body))
				req.Header.Set("Content-Type", c.ct)
				client := b.c
				if !c.auth {
					req.Header.Set("Cookie", "session=unknown")
					client = &http.Client{CheckRedirect: b.c.CheckRedirect}
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode >= 500 || resp.StatusCode < 300 && c.name != "JSON instead of a form" {
					t.Errorf("status %d", resp.StatusCode)
				}
			})
		}
	}
}

func TestNotFoundShapes(t *testing.T) {
	ts := newTestServer(t, memory.New())
	for _, tt := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/api/nothing", 404, "application/json"},
		{"DELETE", "/healthz", 405, "application/json"},
		{"GET", "/no/such/page", 404, "text/html; charset=utf-8"},
		{"PUT", "/login", 405, "text/html; charset=utf-8"},
		{"GET", "/static/", 404, "text/html; charset=utf-8"},
	} {
		req, _ := http.NewRequest(tt.method, ts.URL+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != tt.ctype {
			t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.status, tt.ctype)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t, memory.New())
	resp, err := http.Get(ts.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for h, want := range map[string]string{
		"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("CSP = %q", resp.Header.Get("Content-Security-Policy"))
	}
}

func TestHealth(t *testing.T) {
	ts := newTestServer(t, brokenStore{memory.New()})
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	wantStatus(t, resp, http.StatusServiceUnavailable)
	contains(t, body, `"unavailable"`)
	ok := newTestServer(t, memory.New())
	resp, _ = http.Get(ok.URL + "/healthz")
	resp.Body.Close()
	wantStatus(t, resp, http.StatusOK)
}

// The sign-up link's page refuses a password of blanks or one of the most common, saying why,
// and creates nothing.
func TestSignupRefusesWeakPasswords(t *testing.T) {
	ts := newTestServer(t, memory.New())
	b := ts.browser(t)
	resp, _ := b.post("/signup", url.Values{"email": {"weak@example.com"}})
	wantStatus(t, resp, http.StatusSeeOther)
	link := signupLink(t, b.mail.next(t, "weak@example.com"))
	for pw, want := range map[string]string{
		"12345678": "10,000 most common passwords",
		"        ": "not only spaces",
		"short":    "at least 8 characters",
	} {
		resp, body := b.post(link, url.Values{"password": {pw}})
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		contains(t, body, want)
		contains(t, body, `action="`+link+`"`)
	}
	if _, err := ts.store.UserByEmail(t.Context(), "weak@example.com"); err == nil {
		t.Error("an account was made with a weak password")
	}
	resp, body := b.post("/signup", url.Values{"email": {"not an address"}})
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	contains(t, body, "like name@example.com")
}

// loginWith posts a login from an injected client address with the given cookies.
func loginWith(h http.Handler, addr, email, password string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"email": {email}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = addr
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// deviceCookie is the device cookie a response set, or nil.
func deviceCookie(rec *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if strings.HasSuffix(c.Name, "device") && c.MaxAge > 0 {
			return c
		}
	}
	return nil
}

// Guessing spread over many addresses is bounded per account: 100 failed logins a day, then
// one a minute, counted in the store across addresses. A browser that signed in to the account
// before carries a signed device cookie and is not counted against that cap, so the owner is
// not locked out; the cookie works only for its own account and only as signed.
func TestLoginCapPerAccountAcrossAddresses(t *testing.T) {
	ts := newTestServer(t, memory.New())
	h := ts.Config.Handler
	ts.browser(t).signup("ann@example.com")
	ts.browser(t).signup("bob@example.com")
	owner := loginWith(h, "198.51.100.7:5000", "ann@example.com", "correct horse battery")
	if owner.Code != http.StatusSeeOther {
		t.Fatalf("owner's login: %d", owner.Code)
	}
	device := deviceCookie(owner)
	if device == nil || !device.HttpOnly || device.Path != "/" {
		t.Fatalf("no HttpOnly device cookie on a successful login: %v", owner.Result().Cookies())
	}
	bobDevice := deviceCookie(loginWith(h, "198.51.100.8:5000", "bob@example.com", "correct horse battery"))

	// 12 addresses guess 10 times each (each address's own limit); 100 of the 120 are checked.
	count := map[int]int{}
	for a := range 12 {
		for range 10 {
			count[loginWith(h, fmt.Sprintf("203.0.113.%d:4000", a+1), "ann@example.com", "guess guess").Code]++
		}
	}
	if count[http.StatusUnauthorized] != 100 || count[http.StatusTooManyRequests] != 20 {
		t.Errorf("120 guesses from 12 addresses: %v, want 100 checked (401) and 20 refused (429)", count)
	}
	// An address with no history and the right password is refused too, without a device cookie.
	rec := loginWith(h, "192.0.2.77:1", "ann@example.com", "correct horse battery")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("right password from a fresh browser past the cap: %d, want 429 with Retry-After", rec.Code)
	}
	// A forged, a tampered and another account's device cookie count like no cookie.
	forged := &http.Cookie{Name: device.Name, Value: "v1.x.y.z"}
	tampered := &http.Cookie{Name: device.Name, Value: device.Value[:len(device.Value)-2] + "AA"}
	for name, c := range map[string]*http.Cookie{"forged": forged, "tampered": tampered, "bob's": bobDevice} {
		if got := loginWith(h, "192.0.2.78:1", "ann@example.com", "correct horse battery", c).Code; got != http.StatusTooManyRequests {
			t.Errorf("%s device cookie: %d, want 429", name, got)
		}
	}
	// The owner's browser gets in at once, from yet another address.
	if got := loginWith(h, "192.0.2.99:1", "ann@example.com", "correct horse battery", device).Code; got != http.StatusSeeOther {
		t.Errorf("owner's browser past the cap: %d, want 303", got)
	}
	// Another account is not affected.
	if got := loginWith(h, "192.0.2.79:1", "bob@example.com", "correct horse battery").Code; got != http.StatusSeeOther {
		t.Errorf("another account: %d, want 303", got)
	}
	// Past the cap, one attempt a minute from anywhere.
	ts.now = ts.now.Add(time.Minute)
	if got := loginWith(h, "192.0.2.80:1", "ann@example.com", "guess guess").Code; got != http.StatusUnauthorized {
		t.Errorf("a minute later: %d, want one attempt checked (401)", got)
	}
	if got := loginWith(h, "192.0.2.81:1", "ann@example.com", "correct horse battery").Code; got != http.StatusTooManyRequests {
		t.Errorf("second attempt of that minute: %d, want 429", got)
	}
	// A day after the first failure the count starts again.
	ts.now = ts.now.Add(24 * time.Hour)
	if got := loginWith(h, "192.0.2.82:1", "ann@example.com", "correct horse battery").Code; got != http.StatusSeeOther {
		t.Errorf("a day later: %d, want 303", got)
	}
}

// Sign-up answers alike whether or not the e-mail has an account: the same page, no session,
// and an e-mail to the address, which either carries the link that creates the account or tells
// the owner they already have one. Following the link (a GET shows the password form; only the
// POST creates) signs the new user in; a link that was tampered with or is older than a day
// does not.
func TestSignupAnswersAlikeForKnownAndNewEmails(t *testing.T) {
	ts := newTestServer(t, memory.New())
	ts.browser(t).signup("ann@example.com")

	attacker := ts.browser(t)
	answer := func(email string) (int, string, []*http.Cookie) {
		resp, body := attacker.post("/signup", url.Values{"email": {email}})
		return resp.StatusCode, strings.ReplaceAll(body, email, "EMAIL") + resp.Header.Get("Location"), resp.Cookies()
	}
	knownStatus, knownBody, knownCookies := answer("ann@example.com")
	newStatus, newBody, newCookies := answer("new@example.com")
	if knownStatus != http.StatusSeeOther || newStatus != knownStatus || knownBody != newBody {
		t.Errorf("known e-mail: %d, new e-mail: %d; bodies equal: %v", knownStatus, newStatus, knownBody == newBody)
	}
	if len(knownCookies) != 0 || len(newCookies) != 0 {
		t.Errorf("cookies: known %v, new %v; want none", knownCookies, newCookies)
	}
	_, sent := attacker.get("/signup?sent=1")
	contains(t, sent, "Check your e-mail")
	if _, err := ts.store.UserByEmail(t.Context(), "new@example.com"); err == nil {
		t.Error("the account exists before its link was followed")
	}

	owner := attacker.mail.next(t, "ann@example.com")
	if !strings.Contains(owner.body, "already has one") || !strings.Contains(owner.body, "http://sitepulse.test/login") ||
		!strings.Contains(owner.body, "http://sitepulse.test/password/forgot") || confirmLinkRe.MatchString(owner.body) {
		t.Errorf("the owner's message: %q", owner.body)
	}
	link := signupLink(t, attacker.mail.next(t, "new@example.com"))
	resp, body := attacker.get(link)
	wantStatus(t, resp, http.StatusOK)
	contains(t, body, "new@example.com")
	contains(t, body, `type="password"`)
	if got := resp.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("the link's page sends Referrer-Policy %q", got)
	}
	if _, err := ts.store.UserByEmail(t.Context(), "new@example.com"); err == nil {
		t.Error("a GET of the link created the account")
	}

	for name, bad := range map[string]string{"tampered": link[:len(link)-3] + "AAA", "garbage": "/signup/confirm/x.y", "long": "/signup/confirm/" + strings.Repeat("A", 3000)} {
		resp, _ := attacker.post(bad, url.Values{"password": {"a long new password"}})
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s link: %d, want 400", name, resp.StatusCode)
		}
	}
	later := ts.now
	ts.now = ts.now.Add(25 * time.Hour)
	resp, body = attacker.post(link, url.Values{"password": {"a long new password"}})
	wantStatus(t, resp, http.StatusGone)
	contains(t, body, "expired")
	ts.now = later

	resp, _ = attacker.post(link, url.Values{"password": {"a long new password"}})
	wantStatus(t, resp, http.StatusSeeOther)
	u, err := ts.store.UserByEmail(t.Context(), "new@example.com")
	if err != nil {
		t.Fatal("no account after the link was followed")
	}
	if ok, _ := store.CheckPassword(u.PasswordHash, "a long new password", 1000); !ok {
		t.Error("the account does not have the password chosen on the link's page")
	}
	var session, device bool
	for _, c := range resp.Cookies() {
		session = session || c.Name == "session"
		device = device || c.Name == "device"
	}
	if !session || !device {
		t.Errorf("cookies after confirming: %v, want a session and a device cookie", resp.Cookies())
	}
	// The link again, once the account exists: it says so, without making another or
	// changing the password.
	for _, method := range []string{"GET", "POST"} {
		var resp *http.Response
		var body string
		if method == "GET" {
			resp, body = ts.browser(t).get(link)
		} else {
			resp, body = ts.browser(t).post(link, url.Values{"password": {"another long password"}})
		}
		wantStatus(t, resp, http.StatusConflict)
		contains(t, body, "Forgot password")
	}
	if u2, _ := ts.store.UserByEmail(t.Context(), "new@example.com"); u2.PasswordHash != u.PasswordHash {
		t.Error("following the link again changed the password")
	}
}
