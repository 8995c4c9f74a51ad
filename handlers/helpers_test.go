package handlers

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// testServer is a running SitePulse handler on a memory store, with a clock tests can move.
type testServer struct {
	*httptest.Server
	store store.Store
	now   time.Time
}

// withStore wires a whole store into every surface of d, as run() does.
func withStore(st store.Store, d Deps) Deps {
	d.Auth = st
	d.Accounts = st
	d.Sites = st
	d.Budgets = st
	d.Scans = st
	d.Reports = st
	d.API = st
	d.Webhooks = st
	d.Connections = st
	d.Workspaces = st
	d.Channels = st
	d.Runners = st
	d.Health = st
	d.CI = st
	d.SSO = st
	d.Beacons = st
	d.SecurityLog = st
	return d
}

// withServers wires st into d and adds the OAuth and MCP servers over it.
func withServers(st store.Store, d Deps) Deps {
	d = withStore(st, d)
	d.OAuth = oauth.New(oauth.Config{Store: st, BaseURL: d.BaseURL, Now: d.Now, Log: d.Log})
	d.MCP = mcp.New(mcp.Config{Sites: st, Scans: st, Writes: st, BaseURL: d.BaseURL, Now: d.Now, Log: d.Log})
	if d.Mail == nil {
		d.Mail = outboxFor(st).send
	}
	return d
}

func newTestServer(t *testing.T, st store.Store) *testServer { return newTestServerWith(t, st, nil) }

// newTestServerWith is newTestServer with the handler's dependencies changed by with.
func newTestServerWith(t *testing.T, st store.Store, with func(*Deps)) *testServer {
	t.Helper()
	ts := &testServer{store: st, now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	d := Deps{BaseURL: "http://sitepulse.test", Now: func() time.Time { return ts.now }, PasswordIterations: 1000}
	if with != nil {
		with(&d)
	}
	h, err := NewHandler(withServers(st, d))
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// browser is a client with a cookie jar that does not follow redirects, so tests see them.
type browser struct {
	t      *testing.T
	c      *http.Client
	base   string
	csrf   string
	userID string
	mail   *outbox // of the server's store
}

func (ts *testServer) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: ts.URL, mail: outboxFor(ts.store), c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp, readBody(b.t, resp)
}

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp, readBody(b.t, resp)
}

// postFollow posts a form and, when the answer is a redirect (POST-redirect-GET), gets where
// it leads: the page that shows what the POST did, and its one-time notice.
func (b *browser) postFollow(path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	resp, body := b.post(path, form)
	if resp.StatusCode != http.StatusSeeOther {
		return resp, body
	}
	return b.get(resp.Header.Get("Location"))
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var csrfRe = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// testPassword is the password signup chooses.
const testPassword = "correct horse battery"

// signup creates an account through the e-mailed link, choosing testPassword on its page,
// leaves the browser signed in and remembers its CSRF token.
func (b *browser) signup(email string) {
	b.t.Helper()
	resp, _ := b.post("/signup", url.Values{"email": {email}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("signup: %d, want 303", resp.StatusCode)
	}
	b.confirm(b.mail.next(b.t, email), testPassword)
	b.refreshCSRF()
}

var confirmLinkRe = regexp.MustCompile(`https?://[^/\s]+(/signup/confirm/[A-Za-z0-9_-]+)`)

// signupLink is the path of the sign-up link of a message.
func signupLink(t testing.TB, m sentMail) string {
	t.Helper()
	link := confirmLinkRe.FindStringSubmatch(m.body)
	if link == nil {
		t.Fatalf("no sign-up link in %q", m.body)
	}
	return link[1]
}

// confirm follows the sign-up link of a message and creates the account with password.
func (b *browser) confirm(m sentMail, password string) {
	b.t.Helper()
	link := signupLink(b.t, m)
	resp, body := b.get(link)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("confirm page: %d", resp.StatusCode)
	}
	if !strings.Contains(body, `action="`+link+`"`) {
		b.t.Fatalf("the confirm page does not post to its link: %.300s", body)
	}
	resp, _ = b.post(link, url.Values{"password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("confirm: %d", resp.StatusCode)
	}
}

// sentMail is a message the service sent.
type sentMail struct{ to, subject, body string }

// outbox keeps the messages a handler sent, by recipient; one per store, so each test has its
// own.
type outbox struct {
	mu sync.Mutex
	to map[string]chan sentMail
}

var outboxes sync.Map // store.Store -> *outbox

func outboxFor(st store.Store) *outbox {
	o, _ := outboxes.LoadOrStore(st, &outbox{to: map[string]chan sentMail{}})
	return o.(*outbox)
}

func (o *outbox) box(to string) chan sentMail {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.to[to] == nil {
		o.to[to] = make(chan sentMail, 16)
	}
	return o.to[to]
}

func (o *outbox) send(_ context.Context, to, subject, body string) error {
	o.box(to) <- sentMail{to, subject, body}
	return nil
}

// next waits for the next message to a recipient (they are sent in the background).
func (o *outbox) next(t testing.TB, to string) sentMail {
	t.Helper()
	select {
	case m := <-o.box(to):
		return m
	case <-time.After(storetest.Timeout()):
		t.Fatalf("no e-mail to %s", to)
		return sentMail{}
	}
}

func (b *browser) refreshCSRF() {
	b.t.Helper()
	_, body := b.get("/settings")
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no csrf token on /settings: %.300s", body)
	}
	b.csrf = m[1]
}

func wantStatus(t *testing.T, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Errorf("%s %s: status %d, want %d", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want)
	}
}

func contains(t *testing.T, body, want string) {
	t.Helper()
	if !strings.Contains(body, want) {
		t.Errorf("body does not contain %q:\n%.600s", want, body)
	}
}
