package lighthouse

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/netguard"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
)

// The secrets of the members' site: none may reach the third party or the log.
const (
	basicUser     = "alice"
	basicPassword = "basic-pw-7f3a9c"
	pastedCookie  = "pasted-cookie-5d2e81"
	formPassword  = "form-pw-c4b6e2"
	formProof     = "Signed in as Alice"
)

// membersSite is a site whose members-only pages each need one kind of sign-in, beside a
// public login form: /basic/members basic auth (else 401), /cookies/members the pasted cookie
// (else 403), /form/members the session the login form gives (else a redirect to the form). A members page's largest text, its LCP
// element, says "Members only"; it loads a script and an image from a third party and an
// image from a subdomain of its own host. The login page says "Please sign in".
// /basic/hostile is a basic auth members page that attacks the origin rule (issue 44): frames
// of a third party and of another port of the site's host that ask for basic auth, a frame of
// the site that redirects to the third party, which asks, and forms posted off-origin to both,
// which ask too.
type membersSite struct {
	mu       sync.Mutex
	sessions map[string]bool // sessions the login form gave, until revoked
}

func (m *membersSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page := func(status int, title, heading string, more ...string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>%s</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><h1 style="font-size:48px">%s</h1>
<script src="http://cdn.thirdparty.test/widget.js"></script>
<img src="http://cdn.thirdparty.test/pixel.png" alt="" width="8" height="8">
<img src="http://static.members.test/pixel.png" alt="" width="8" height="8">
<img src="http://cdn.thirdparty.test/challenge.png" alt="" width="8" height="8">
%s</body></html>`, title, heading, strings.Join(more, ""))
	}
	members := func() { page(200, "Members", "Members only: the quarterly numbers, for members of the club") }
	toLogin := func() { http.Redirect(w, r, "/login", http.StatusFound) }
	switch r.URL.Path {
	case "/basic/members":
		u, p, ok := r.BasicAuth()
		if ok && u == basicUser && subtle.ConstantTimeCompare([]byte(p), []byte(basicPassword)) == 1 {
			members()
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="members"`)
		page(401, "Sign in", "Please sign in")
	case "/basic/hostile":
		if u, p, ok := r.BasicAuth(); !ok || u != basicUser || subtle.ConstantTimeCompare([]byte(p), []byte(basicPassword)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="members"`)
			page(401, "Sign in", "Please sign in")
			return
		}
		page(200, "Members", "Members only: the quarterly numbers, for members of the club", hostileFrames)
	case "/basic/away": // a redirect from the site to another origin
		http.Redirect(w, r, "http://cdn.thirdparty.test/after-redirect", http.StatusFound)
	case "/basic/downgrade": // a redirect from the https site to its own host over http
		http.Redirect(w, r, "http://members.test/basic/members", http.StatusFound)
	case "/cookies/members":
		if c, err := r.Cookie("session"); err == nil && c.Value == pastedCookie {
			members()
			return
		}
		page(403, "Forbidden", "Members only: sign in first")
	case "/form/members":
		if c, err := r.Cookie("sid"); err == nil && m.live(c.Value) {
			members()
			return
		}
		toLogin()
	case "/login":
		if r.Method == http.MethodPost {
			r.ParseForm()
			if r.PostForm.Get("csrf") != "token-from-the-form" || r.PostForm.Get("user") != basicUser || r.PostForm.Get("password") != formPassword {
				page(200, "Sign in", "Please sign in: wrong user name or password")
				return
			}
			sid, _ := store.NewSecret("sid_")
			m.mu.Lock()
			m.sessions[sid] = true
			m.mu.Unlock()
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: sid, Path: "/", HttpOnly: true})
			http.Redirect(w, r, "/welcome", http.StatusSeeOther)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head><body><h1 style="font-size:48px">Please sign in</h1>
<form method="post" action="/login"><input type="hidden" name="csrf" value="token-from-the-form">
<input name="user"><input name="password" type="password"><button>Sign in</button></form></body></html>`)
	case "/welcome":
		if c, err := r.Cookie("sid"); err == nil && m.live(c.Value) {
			page(200, "Welcome", formProof)
			return
		}
		toLogin()
	default:
		http.NotFound(w, r)
	}
}

// hostileFrames are /basic/hostile's attacks on the origin rule: each asks for basic auth from
// another origin than the site's, by a frame, a redirect or an off-origin form.
const hostileFrames = `<iframe src="http://cdn.thirdparty.test/frame" width="40" height="20"></iframe>
<iframe src="http://members.test:8081/frame" width="40" height="20"></iframe>
<iframe src="/basic/away" width="40" height="20"></iframe>
<iframe name="sink1" width="40" height="20"></iframe><iframe name="sink2" width="40" height="20"></iframe>
<form id="f1" method="post" action="http://cdn.thirdparty.test/collect" target="sink1"><input type="hidden" name="q" value="1"></form>
<form id="f2" method="post" action="http://members.test:8081/collect" target="sink2"><input type="hidden" name="q" value="2"></form>
<script>document.getElementById("f1").submit(); document.getElementById("f2").submit();</script>
`

func (m *membersSite) live(sid string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[sid]
}

// revokeAll ends every session the login form gave.
func (m *membersSite) revokeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.sessions)
}

// thirdParty records the credentials each request to it carries; its challenge.png asks for
// basic auth, as a hostile widget fishing for the site's password would.
type thirdParty struct {
	mu   sync.Mutex
	seen []string // "host path cookie=... authorization=..."
}

func (t *thirdParty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	t.seen = append(t.seen, fmt.Sprintf("%s%s cookie=%q authorization=%q", r.Host, r.URL.Path, r.Header.Get("Cookie"), r.Header.Get("Authorization")))
	t.mu.Unlock()
	switch r.URL.Path {
	case "/widget.js":
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.title = document.title;`)
	case "/challenge.png", "/frame", "/after-redirect", "/collect", "/basic/members":
		w.Header().Set("WWW-Authenticate", `Basic realm="widget"`)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body><h1>Sign in</h1></body></html>`)
	default:
		w.Header().Set("Content-Type", "image/gif")
		w.Write([]byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"))
	}
}

// requests is what reached the third party since the last call.
func (t *thirdParty) requests() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.seen
	t.seen = nil
	return out
}

// dialHosts dials made-up host:port names on the local servers hosts maps them to.
func dialHosts(hosts map[string]string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		to, ok := hosts[address]
		if !ok {
			return nil, fmt.Errorf("no such test host %s", address)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, to)
	}
}

// Issue 38 with a real Chrome and Lighthouse: the members' pages audited signed in with basic
// auth, a pasted cookie and a login form are the members' pages (their LCP element is members-
// only text), and the third party they load receives no cookie and no Authorization header,
// even when it asks for basic auth; without the setting the login page is what gets audited,
// and a sign-in that does not hold is an error that says so.
func TestSignedInAuditsRealChrome(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	cmd, chrome := lighthouseCLI(t)
	site := &membersSite{sessions: map[string]bool{}}
	siteSrv := httptest.NewServer(site)
	defer siteSrv.Close()
	third := &thirdParty{}
	thirdSrv := httptest.NewServer(third)
	defer thirdSrv.Close()
	// Made-up hosts, so that the third party is another host (cookies are scoped by host, not
	// port): the proxy and the login form dial them on the local servers.
	hosts := map[string]string{"members.test:80": siteSrv.Listener.Addr().String(),
		"cdn.thirdparty.test:80": thirdSrv.Listener.Addr().String(), "static.members.test:80": thirdSrv.Listener.Addr().String(),
		"members.test:8081": thirdSrv.Listener.Addr().String()} // another port of the site's host is another origin
	dial := dialHosts(hosts)
	logs := &scantest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := New(Config{Command: cmd, ChromePath: chrome, Timeout: 3 * time.Minute, Guard: netguard.Guard{AllowPrivate: true}, Dial: dial,
		ChromeFlags: "--headless=new --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update --disable-sync",
		Log:         log})
	const origin = "http://members.test"
	ctx := context.Background()

	lcpOf := func(t *testing.T, r store.PageResult) string {
		t.Helper()
		if r.LCPElement == nil {
			t.Fatalf("no LCP element in the result")
		}
		return r.LCPElement.NodeLabel
	}
	noCredentials := func(t *testing.T) {
		t.Helper()
		seen := third.requests()
		if len(seen) == 0 {
			t.Errorf("the third party received no request: the page did not load it")
		}
		for _, s := range seen {
			if !strings.HasSuffix(s, `cookie="" authorization=""`) {
				t.Errorf("the third party received credentials: %s", s)
			}
		}
		t.Logf("third-party requests: %q", seen)
	}
	signedIn := func(t *testing.T, a store.Access, path string) {
		s, err := l.SignIn(ctx, origin, a)
		if err != nil {
			t.Fatalf("sign-in: %v", err)
		}
		r, err := s.Audit(ctx, origin+path, store.StrategyDesktop)
		if err != nil {
			t.Fatalf("signed-in audit of %s: %v\nlog:\n%s", path, err, logs.String())
		}
		if lcp := lcpOf(t, r); !strings.Contains(lcp, "Members only") {
			t.Errorf("LCP element %q: want the members-only heading", lcp)
		}
		stored := string(store.EncodeResult(r)) // what the scan keeps, exports and reports
		for _, secret := range []string{basicUser + ":", basicPassword, pastedCookie, formPassword, "sid_"} {
			if strings.Contains(stored, secret) {
				t.Errorf("the page result holds the secret %q", secret)
			}
		}
		noCredentials(t)
	}

	t.Run("basic auth is answered to the site's challenge only", func(t *testing.T) {
		signedIn(t, store.Access{Kind: store.AccessBasic, Username: basicUser, Password: basicPassword}, "/basic/members")
		if !regexp.MustCompile(`signed_in=basic auth_answered=[1-9]\d* auth_refused=0`).MatchString(logs.String()) {
			t.Errorf("log: want the run's line to count the site's challenge answered and none refused:\n%s", logs.String())
		}
	})
	t.Run("basic auth goes to no other origin: frames, a redirect, another port, off-origin forms", func(t *testing.T) {
		s, err := l.SignIn(ctx, origin, store.Access{Kind: store.AccessBasic, Username: basicUser, Password: basicPassword})
		if err != nil {
			t.Fatalf("sign-in: %v", err)
		}
		r, err := s.Audit(ctx, origin+"/basic/hostile", store.StrategyDesktop)
		if err != nil {
			t.Fatalf("signed-in audit: %v\nlog:\n%s", err, logs.String())
		}
		if lcp := lcpOf(t, r); !strings.Contains(lcp, "Members only") {
			t.Errorf("LCP element %q: want the members-only heading", lcp)
		}
		seen := strings.Join(third.requests(), "\n")
		// Each attack reached the third party (so it ran), and none carried a credential.
		for _, asked := range []string{"cdn.thirdparty.test/frame ", "members.test:8081/frame ", "cdn.thirdparty.test/after-redirect ",
			"cdn.thirdparty.test/collect ", "members.test:8081/collect ", "cdn.thirdparty.test/challenge.png "} {
			if !strings.Contains(seen, asked) {
				t.Errorf("the attack %s never reached the third party:\n%s", strings.TrimSpace(asked), seen)
			}
		}
		for _, line := range strings.Split(seen, "\n") {
			if !strings.HasSuffix(line, `cookie="" authorization=""`) {
				t.Errorf("the third party received credentials: %s", line)
			}
		}
		t.Logf("third-party requests:\n%s", seen)
	})
	t.Run("a pasted cookie goes to the site's host only", func(t *testing.T) {
		signedIn(t, store.Access{Kind: store.AccessCookies, Cookies: []store.NameValue{{Name: "session", Value: pastedCookie}}}, "/cookies/members")
	})
	form := store.Access{Kind: store.AccessForm, LoginURL: origin + "/login", Proof: formProof,
		Fields: []store.NameValue{{Name: "user", Value: basicUser}, {Name: "password", Value: formPassword}}}
	t.Run("the login form's session goes to the site's host only", func(t *testing.T) {
		signedIn(t, form, "/form/members")
	})
	t.Run("without the setting the login page is audited", func(t *testing.T) {
		r, err := l.Audit(ctx, origin+"/form/members", store.StrategyDesktop)
		if err != nil {
			t.Fatalf("audit: %v", err)
		}
		if lcp := lcpOf(t, r); lcp != "Please sign in" {
			t.Errorf("LCP element %q: want the login page's heading", lcp)
		}
		third.requests()
	})
	t.Run("a session the site ended before the audit fails the audit", func(t *testing.T) {
		s, err := l.SignIn(ctx, origin, form)
		if err != nil {
			t.Fatalf("sign-in: %v", err)
		}
		site.revokeAll()
		_, err = s.Audit(ctx, origin+"/form/members", store.StrategyDesktop)
		if want := "signed-in audit failed: /form/members led to the login form /login"; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("audit error = %v, want it to start %q", err, want)
		}
		third.requests()
	})
	t.Run("a cookie the site does not accept fails the audit", func(t *testing.T) {
		s, err := l.SignIn(ctx, origin, store.Access{Kind: store.AccessCookies, Cookies: []store.NameValue{{Name: "session", Value: "expired"}}})
		if err != nil {
			t.Fatalf("sign-in: %v", err)
		}
		_, err = s.Audit(ctx, origin+"/cookies/members", store.StrategyDesktop)
		if want := "signed-in audit failed: /cookies/members answered 403 Forbidden: the site did not accept the cookies"; err == nil || err.Error() != want {
			t.Errorf("audit error = %v, want %q", err, want)
		}
		third.requests()
	})
	t.Run("a wrong basic auth password fails the audit", func(t *testing.T) {
		s, err := l.SignIn(ctx, origin, store.Access{Kind: store.AccessBasic, Username: basicUser, Password: "not-the-password"})
		if err != nil {
			t.Fatalf("sign-in: %v", err)
		}
		_, err = s.Audit(ctx, origin+"/basic/members", store.StrategyDesktop)
		if want := "signed-in audit failed: /basic/members answered 401 Unauthorized"; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("audit error = %v, want it to start %q", err, want)
		}
		noCredentials(t)
	})
	for _, secret := range []string{basicPassword, pastedCookie, formPassword, "sid_"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the DEBUG log holds the secret %q:\n%s", secret, logs.String())
		}
	}
}

// TestSignedInDowngradeRealChrome (issue 44, attack 6): the site is https, and its page redirects
// to the same host over http, which asks for basic auth: another origin (the scheme is part of
// it), so the credentials do not go, the audit fails, and the http side (recorded like a third
// party) sees no Authorization header.
func TestSignedInDowngradeRealChrome(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	cmd, chrome := lighthouseCLI(t)
	siteSrv := httptest.NewTLSServer(&membersSite{sessions: map[string]bool{}})
	defer siteSrv.Close()
	plain := &thirdParty{} // the site's host over http
	plainSrv := httptest.NewServer(plain)
	defer plainSrv.Close()
	hosts := map[string]string{"members.test:443": siteSrv.Listener.Addr().String(), "members.test:80": plainSrv.Listener.Addr().String(),
		"cdn.thirdparty.test:80": plainSrv.Listener.Addr().String(), "static.members.test:80": plainSrv.Listener.Addr().String()}
	dial := dialHosts(hosts)
	logs := &scantest.LogBuffer{}
	l := New(Config{Command: cmd, ChromePath: chrome, Timeout: 3 * time.Minute, Guard: netguard.Guard{AllowPrivate: true}, Dial: dial,
		// The test server's certificate is its own: Chrome is told to take it.
		ChromeFlags: "--headless=new --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update --disable-sync --ignore-certificate-errors",
		Log:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx := context.Background()
	s, err := l.SignIn(ctx, "https://members.test", store.Access{Kind: store.AccessBasic, Username: basicUser, Password: basicPassword})
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	_, err = s.Audit(ctx, "https://members.test/basic/downgrade", store.StrategyDesktop)
	if err == nil { // the http page answered 401 without them: a sign-in failure, or Lighthouse's own
		t.Error("the downgraded page was audited: it got the credentials, or the audit ignored its 401")
	}
	seen := strings.Join(plain.requests(), "\n")
	if !strings.Contains(seen, "members.test/basic/members ") {
		t.Errorf("the downgrade never reached the http side:\n%s\nlog:\n%s", seen, logs.String())
	}
	for _, line := range strings.Split(seen, "\n") {
		if line != "" && !strings.HasSuffix(line, `cookie="" authorization=""`) {
			t.Errorf("the http side received credentials: %s", line)
		}
	}
	t.Logf("audit error: %v\nhttp side:\n%s", err, seen)
}
