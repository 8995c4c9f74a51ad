package lighthouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sitepulse/store"
)

// SignedIn audits a site's private pages for one scan (DESIGN §17): every audit runs in a Chrome
// SitePulse starts itself, fresh (its own profile, so nothing of another audit or scan is left in
// it), signed in through the DevTools protocol before Lighthouse attaches to it, so that only the
// site's own origin receives the credentials:
//
//   - cookies (pasted, or got from the login form) are set host-only for the site's host with
//     Storage.setCookies: a third party, a subdomain included, never gets them, and HttpOnly keeps
//     them from the page's scripts, third-party scripts included;
//   - basic auth is answered (Fetch.authRequired) only to a challenge of the site's origin, and
//     refused to any other; no Authorization header is set up front;
//   - never Lighthouse's extraHeaders (Network.setExtraHTTPHeaders), which every request of the
//     page carries, third parties' too.
//
// Lighthouse runs with --port (it attaches to that Chrome) and --disable-storage-reset, so the
// sign-in is not undone between it and the audit; the profile is fresh, so the cache is cold as
// in any other audit. Chrome's traffic goes through the run's ChromeProxy, as without sign-in.
// An audited page that still answers 401 or 403, or lands on the login form, is an error that
// says "signed-in audit failed", never a silently audited login page.
type SignedIn struct {
	r        *Runner
	origin   string
	kind     store.AccessKind
	username string
	password string
	cookies  []store.NameValue
	loginURL string // form: where a page that did not sign in lands
}

// SignInFailed starts the error of every audit a sign-in did not hold for.
const SignInFailed = "signed-in audit failed: "

// SignIn prepares the audits of one scan of the site at origin (scheme://host[:port]) with its
// access setting, opened: a login form is signed in to now, through the outbound guard. The
// error says why the sign-in failed, starting with SignInFailed, and never carries a secret.
func (l *Runner) SignIn(ctx context.Context, origin string, a store.Access) (*SignedIn, error) {
	if err := a.Validate(origin); err != nil {
		return nil, errors.New(SignInFailed + "the access setting is not valid: " + store.InvalidMessage(err) + " Set it again on the site's edit page.")
	}
	s := &SignedIn{r: l, origin: origin, kind: a.Kind, username: a.Username, password: a.Password, cookies: a.Cookies}
	if a.Kind == store.AccessForm {
		cookies, err := l.formLogin(ctx, origin, a)
		if err != nil {
			return nil, err
		}
		s.cookies, s.loginURL = cookies, a.LoginURL
	}
	return s, nil
}

// Audit runs Lighthouse once on a page of the site, signed in.
func (s *SignedIn) Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	if !store.SameOrigin(pageURL, s.origin) {
		return store.PageResult{}, errors.New(SignInFailed + "the page is not on the site's origin " + s.origin + ", the only one its credentials go to")
	}
	return s.r.audit(ctx, pageURL, strategy, s)
}

// chromeLauncherFlags are chrome-launcher's default flags (chrome-launcher 1.2,
// dist/flags.js), which Lighthouse gives the Chrome it starts: a Chrome started here for a
// signed-in audit gets the same, so its numbers compare with the others'.
var chromeLauncherFlags = []string{
	"--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,CalculateNativeWinOcclusion,InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater,AutofillServerCommunication,PrivacySandboxSettings4,RenderDocument",
	"--disable-extensions", "--disable-component-extensions-with-background-pages", "--disable-background-networking",
	"--disable-component-update", "--disable-client-side-phishing-detection", "--disable-sync", "--metrics-recording-only",
	"--disable-default-apps", "--mute-audio", "--no-default-browser-check", "--no-first-run",
	"--disable-backgrounding-occluded-windows", "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
	"--disable-ipc-flooding-protection", "--password-store=basic", "--use-mock-keychain",
	"--force-fieldtrials=*BackgroundTracing/default/", "--disable-hang-monitor", "--disable-prompt-on-repost",
	"--disable-domain-reliability", "--propagate-iph-for-testing",
}

// chromeBinaries are looked for on PATH when CHROME_PATH is not set.
var chromeBinaries = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}

// chromePath is CHROME_PATH, or the first Chrome found on PATH.
func (l *Runner) chromePath() (string, error) {
	if l.cfg.ChromePath != "" {
		return l.cfg.ChromePath, nil
	}
	for _, name := range chromeBinaries {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("signed-in audits start Chrome themselves: set CHROME_PATH (docs/local-lighthouse.md)")
}

// signedChrome is the Chrome of one signed-in audit, signed in and waiting for Lighthouse.
type signedChrome struct {
	cmd    *exec.Cmd
	exited chan struct{}
	dir    string
	port   int
	cdp    *cdpClient
	stderr *tailBuffer

	mu      sync.Mutex
	initial map[string]bool // the page targets before Lighthouse attached
	pages   map[string]bool // every page target seen
	// answered and refused count the basic auth challenges answered (the site's) and refused
	// (another origin's, or the site's again for a URL it was answered for: the credentials were
	// not accepted).
	answered, refused atomic.Int64
	tried             map[string]bool // the site's URLs answered (under mu)
	rejected          map[string]bool // those that challenged again after the answer (under mu)
}

// start launches Chrome with flags (the configured ones and the run's network flags), waits for
// its DevTools endpoint and signs it in to the site.
func (s *SignedIn) start(ctx context.Context, flags []string) (*signedChrome, error) {
	path, err := s.r.chromePath()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sitepulse-chrome-")
	if err != nil {
		return nil, fmt.Errorf("Chrome's profile: %w", err)
	}
	args := append(append(append([]string{}, chromeLauncherFlags...), flags...),
		"--remote-debugging-port=0", "--user-data-dir="+dir, "about:blank")
	c := &signedChrome{dir: dir, exited: make(chan struct{}), stderr: &tailBuffer{},
		initial: map[string]bool{}, pages: map[string]bool{},
		tried: map[string]bool{}, rejected: map[string]bool{}}
	c.cmd = exec.Command(path, args...)
	c.cmd.Stdout, c.cmd.Stderr = nil, c.stderr
	if err := c.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start Chrome (%s): %w", path, err)
	}
	go func() { c.cmd.Wait(); close(c.exited) }()
	fail := func(err error) (*signedChrome, error) {
		c.Close()
		return nil, err
	}
	wsURL, err := c.devtoolsURL(ctx)
	if err != nil {
		return fail(err)
	}
	if c.cdp, err = dialCDP(ctx, wsURL, s.onEvent(c)); err != nil {
		return fail(err)
	}
	if err := s.signIn(ctx, c); err != nil {
		return fail(err)
	}
	return c, nil
}

// devtoolsURL waits for Chrome to write DevToolsActivePort (its port, then the browser's
// WebSocket path) into its profile.
func (c *signedChrome) devtoolsURL(ctx context.Context) (string, error) {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if b, err := os.ReadFile(filepath.Join(c.dir, "DevToolsActivePort")); err == nil {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) == 2 {
				port, err := strconv.Atoi(strings.TrimSpace(lines[0]))
				if err == nil && port > 0 && strings.HasPrefix(lines[1], "/devtools/browser/") {
					c.port = port
					return "ws://127.0.0.1:" + strconv.Itoa(port) + strings.TrimSpace(lines[1]), nil
				}
			}
		}
		select {
		case <-c.exited:
			return "", fmt.Errorf("Chrome exited before it opened its DevTools port: %s", c.stderr.String())
		case <-wait.Done():
			return "", fmt.Errorf("Chrome did not open its DevTools port within 30 s: %w", context.Cause(wait))
		case <-tick.C:
		}
	}
}

// signIn sets the site's cookies host-only, turns on answering the site's basic auth challenge,
// and notes the page targets there are before Lighthouse opens its own.
func (s *SignedIn) signIn(ctx context.Context, c *signedChrome) error {
	if err := c.cdp.Call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}, nil); err != nil {
		return err
	}
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	if err := c.cdp.Call(ctx, "", "Target.getTargets", nil, &targets); err != nil {
		return err
	}
	c.mu.Lock()
	for _, t := range targets.TargetInfos {
		if t.Type == "page" {
			c.initial[t.TargetID] = true
		}
	}
	c.mu.Unlock()
	if len(s.cookies) > 0 {
		secure := strings.HasPrefix(s.origin, "https://")
		cookies := make([]map[string]any, 0, len(s.cookies))
		for _, nv := range s.cookies {
			// A url and no domain: a host-only cookie, sent to the site's host and nowhere else.
			cookies = append(cookies, map[string]any{"name": nv.Name, "value": nv.Value, "url": s.origin + "/", "path": "/",
				"secure": secure, "httpOnly": true, "sameSite": "Lax"})
		}
		if err := c.cdp.Call(ctx, "", "Storage.setCookies", map[string]any{"cookies": cookies}, nil); err != nil {
			return errors.New(SignInFailed + "Chrome refused the site's cookies: " + strings.TrimPrefix(err.Error(), "DevTools Storage.setCookies: "))
		}
	}
	if s.kind == store.AccessBasic {
		// Only the site's own requests are paused, so only its challenges come here.
		pattern := map[string]any{"urlPattern": s.origin + "/*", "requestStage": "Request"}
		if err := c.cdp.Call(ctx, "", "Fetch.enable", map[string]any{"patterns": []any{pattern}, "handleAuthRequests": true}, nil); err != nil {
			return err
		}
	}
	return nil
}

// onEvent answers the Fetch domain's pauses and challenges, and counts the page targets.
func (s *SignedIn) onEvent(c *signedChrome) func(method, sessionID string, params json.RawMessage) {
	return func(method, sessionID string, params json.RawMessage) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		switch method {
		case "Target.targetCreated":
			var e struct {
				TargetInfo struct {
					TargetID string `json:"targetId"`
					Type     string `json:"type"`
				} `json:"targetInfo"`
			}
			if json.Unmarshal(params, &e) == nil && e.TargetInfo.Type == "page" {
				c.mu.Lock()
				c.pages[e.TargetInfo.TargetID] = true
				c.mu.Unlock()
			}
		case "Fetch.requestPaused":
			var e struct {
				RequestID string `json:"requestId"`
			}
			if json.Unmarshal(params, &e) == nil {
				c.cdp.Call(ctx, sessionID, "Fetch.continueRequest", map[string]any{"requestId": e.RequestID}, nil)
			}
		case "Fetch.authRequired":
			var e struct {
				RequestID string `json:"requestId"`
				Request   struct {
					URL string `json:"url"`
				} `json:"request"`
				AuthChallenge struct {
					Source string `json:"source"`
					Origin string `json:"origin"`
				} `json:"authChallenge"`
			}
			if json.Unmarshal(params, &e) != nil {
				return
			}
			answer := map[string]any{"response": "CancelAuth"}
			c.mu.Lock()
			give, ours := answerAuth(s.origin, e.Request.URL, e.AuthChallenge.Origin, e.AuthChallenge.Source, c.tried[e.Request.URL])
			if give {
				c.tried[e.Request.URL] = true
				answer = map[string]any{"response": "ProvideCredentials", "username": s.username, "password": s.password}
				c.answered.Add(1)
			} else {
				if ours {
					c.rejected[e.Request.URL] = true
				}
				c.refused.Add(1)
			}
			c.mu.Unlock()
			c.cdp.Call(ctx, sessionID, "Fetch.continueWithAuth", map[string]any{"requestId": e.RequestID, "authChallengeResponse": answer}, nil)
		}
	}
}

// answerAuth is the private-pages origin rule for a basic auth challenge (Fetch.authRequired) of
// a signed-in audit of the site at origin: the credentials go (give) only to a server's
// challenge, not a proxy's, for a URL of the site's own origin (scheme, host and port) that
// comes from that origin, and only the first time that URL asks: asked again, the site did not
// accept them, and answering again would loop. ours says the challenge was the site's (a
// second ask is a rejection to report). Every other challenge is cancelled: another host, a
// subdomain, another port or scheme (an http downgrade), a redirect's target elsewhere.
func answerAuth(origin, requestURL, challengeOrigin, source string, askedBefore bool) (give, ours bool) {
	ours = source != "Proxy" && store.SameOrigin(requestURL, origin) && store.SameOrigin(challengeOrigin, origin)
	return ours && !askedBefore, ours
}

// lighthouseAttached reports whether a page target opened after the sign-in: Lighthouse's tab,
// in this Chrome (and not in one it started itself, without the sign-in).
func (c *signedChrome) lighthouseAttached() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.pages {
		if !c.initial[id] {
			return true
		}
	}
	return false
}

// Close closes Chrome (Browser.close, then a kill if it lingers) and removes its profile.
func (c *signedChrome) Close() {
	if c.cdp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.cdp.Call(ctx, "", "Browser.close", nil, nil)
		cancel()
		c.cdp.Close()
	}
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
	os.RemoveAll(c.dir)
}

// signedReport is what a signed-in audit's report says about the page Lighthouse loaded: the
// document it ended on, and the runtime error of a page whose document answered 4xx or 5xx.
type signedReport struct {
	MainDocumentURL string `json:"mainDocumentUrl"`
	RuntimeError    *struct {
		Message string `json:"message"`
	} `json:"runtimeError"`
}

// documentStatus finds the status of a document that answered an error in Lighthouse 13's
// message for it (ERRORED_DOCUMENT_REQUEST, core/lib/lh-error.js: "... (Status code: 403)").
var documentStatus = regexp.MustCompile(`\(Status code: (\d{3})\)`)

// check says why a signed-in audit did not audit the signed-in page: Lighthouse ran elsewhere,
// the site did not accept the basic auth answer, the page (or the document it ended on) answered
// 401 or 403, or it landed on the login form; nil when none of these shows. lhErr is what
// Lighthouse wrote on stderr: after a runtime error it exits at once and its report on stdout is
// cut short (a pipe's first 128 KiB), but the error is on stderr too.
func (s *SignedIn) check(c *signedChrome, pageURL string, report []byte, lhErr string) error {
	if !c.lighthouseAttached() {
		return errors.New(SignInFailed + "Lighthouse did not audit in the signed-in Chrome")
	}
	path := pathOf(pageURL)
	c.mu.Lock()
	rejected := c.rejected[pageURL]
	c.mu.Unlock()
	if rejected {
		return fmt.Errorf(SignInFailed+"%s answered 401 Unauthorized: the site did not accept the %s", path, s.what())
	}
	var r signedReport
	json.Unmarshal(report, &r) // empty when cut short
	msg := lhErr
	if r.RuntimeError != nil {
		msg = r.RuntimeError.Message
	}
	if m := documentStatus.FindStringSubmatch(msg); m != nil && (m[1] == "401" || m[1] == "403") {
		code, _ := strconv.Atoi(m[1])
		return fmt.Errorf(SignInFailed+"%s answered %d %s: the site did not accept the %s", path, code, http.StatusText(code), s.what())
	}
	if s.loginURL != "" && r.MainDocumentURL != "" && pathOf(r.MainDocumentURL) == pathOf(s.loginURL) && path != pathOf(s.loginURL) {
		return fmt.Errorf(SignInFailed+"%s led to the login form %s: the sign-in did not hold", path, pathOf(s.loginURL))
	}
	return nil
}

// what names the credentials of a kind, for the messages.
func (s *SignedIn) what() string {
	switch s.kind {
	case store.AccessBasic:
		return "basic auth user name and password"
	case store.AccessForm:
		return "session of the login form"
	}
	return "cookies"
}

// pathOf is the path of an absolute URL ("/" when it has none), for messages that must not
// carry a query.
func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Path == "" {
		return "/"
	}
	return u.Path
}

// CallsNoKey marks a signed-in audit as one that spends no PSI key (scanner.KeyFree).
func (s *SignedIn) CallsNoKey() {}
