package handlers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/demo"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// apiAccount is one user of an apiFixture with every credential the service knows and their ids.
type apiAccount struct {
	userID      string
	apiKey      string // svc_
	apiKeyID    string
	session     string // the session cookie's value
	csrf        string
	accessToken string // at_, valid at /api/mcp
	clientID    string // an OAuth client the user connected
	siteID      string // a site with two completed scans (A) or none (B)
	scanID      string // the site's latest completed scan (A only)
	prevScanID  string // the completed scan before it (A only)
	siteName    string
	ruleID      string // an alert rule of the site (A only)
	reportID    string // a client report of the latest scan (A only)
	reportToken string // its link's token
	channelID   string // an alert channel of the personal workspace
	// runnerToken is a runner token of the personal workspace; leaseID a lease its runner
	// holds on an audit of the latest scan (A only).
	runnerToken, runnerTokenID, leaseID string
}

// apiFixture is a running service with two users. A is the demo account (real scans built from
// the Lighthouse fixtures, budgets the latest scan breaks); B has a site of its own and nothing else.
type apiFixture struct {
	*httptest.Server
	st   store.Store
	now  time.Time
	a, b apiAccount
}

var fixtureNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func newAPIFixture(t testing.TB, st store.Store) *apiFixture { return newAPIFixtureWith(t, st, nil) }

// newAPIFixtureWith is newAPIFixture with the handler's dependencies changed by with.
func newAPIFixtureWith(t testing.TB, st store.Store, with func(*Deps)) *apiFixture {
	t.Helper()
	ctx := context.Background()
	f := &apiFixture{st: st, now: fixtureNow}
	clock := func() time.Time { return f.now }
	deps := withStore(st, Deps{BaseURL: "http://sitepulse.test", Now: clock, PasswordIterations: 1000})
	if with != nil {
		with(&deps)
	}
	h, err := NewHandler(withServers(st, deps))
	if err != nil {
		t.Fatal(err)
	}
	f.Server = httptest.NewServer(h)
	t.Cleanup(f.Close)

	d, err := demo.Seed(ctx, st, demo.Fixtures{FS: os.DirFS(".."), Before: "testdata/psi-before", Latest: "testdata/psi"}, f.now, 1000)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.UserByEmail(ctx, demo.Email)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := st.APIKeys(ctx, u.ID)
	f.a = apiAccount{userID: u.ID, apiKey: d.APIKey, apiKeyID: keys[0].ID, siteID: d.SiteID, scanID: d.LatestScanID, siteName: demo.SiteName}
	f.credentials(t, &f.a)
	completed, err := st.CompletedScans(ctx, u.ID, d.SiteID, 2)
	must(t, err)
	f.a.prevScanID = completed[len(completed)-1].ID
	f.a.ruleID = store.NewID()
	must(t, st.AddAlertRule(ctx, u.ID, store.AlertRule{ID: f.a.ruleID, SiteID: d.SiteID, Metric: "lcp", Operator: "max", Threshold: 4000, CreatedAt: f.now}))
	f.a.reportID = store.NewID()
	reportToken, reportHash := store.NewSecret("")
	f.a.reportToken = reportToken
	must(t, st.CreateReport(ctx, store.Report{ID: f.a.reportID, TokenHash: reportHash, ScanID: d.LatestScanID, UserID: u.ID, Title: "A's report", CreatedAt: f.now}))

	b := store.User{ID: store.NewID(), Email: "b@example.com", PasswordHash: "x", CreatedAt: f.now}
	must(t, st.CreateUser(ctx, b))
	f.b = apiAccount{userID: b.ID, siteName: "Bee Site"}
	key, hash := store.NewSecret("svc_")
	f.b.apiKey, f.b.apiKeyID = key, store.NewID()
	must(t, st.CreateAPIKey(ctx, store.APIKey{ID: f.b.apiKeyID, UserID: b.ID, Name: "ci", KeyHash: hash, Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: f.now}))
	f.b.siteID = f.newSite(t, b.ID, f.b.siteName)
	f.credentials(t, &f.b)
	// A's runner holds a lease on an audit of A's latest scan, and another audit waits.
	for _, path := range []string{"/", "/pricing"} {
		must(t, st.EnqueueRunnerAudit(ctx, store.RunnerAudit{ID: store.NewID(), WorkspaceID: u.ID, SiteID: d.SiteID, ScanID: d.LatestScanID,
			PageURL: "https://" + demo.Domain + path, Strategy: store.StrategyMobile, CreatedAt: f.now}))
	}
	tok, err := st.RunnerTokenByHash(ctx, store.HashSecret(f.a.runnerToken))
	must(t, err)
	l, err := st.LeaseRunnerAudit(ctx, tok, "a-runner", "", f.now, f.now.Add(time.Hour))
	must(t, err)
	f.a.leaseID = l.LeaseID
	return f
}

// credentials gives an account a session and a connected OAuth client with a valid access token.
func (f *apiFixture) credentials(t testing.TB, acc *apiAccount) {
	t.Helper()
	ctx := context.Background()
	token, hash := store.NewSecret("")
	acc.csrf, _ = store.NewSecret("")
	acc.session = token
	must(t, f.st.CreateSession(ctx, store.Session{TokenHash: hash, UserID: acc.userID, CSRF: acc.csrf, CreatedAt: f.now, ExpiresAt: f.now.Add(time.Hour)}))
	acc.channelID = store.NewID()
	must(t, f.st.CreateChannel(ctx, acc.userID, store.Channel{ID: acc.channelID, WorkspaceID: acc.userID, Kind: store.ChannelEmail, Name: "team mail",
		Events: []string{store.EventScanFailed}, CreatedAt: f.now}))
	runner, runnerHash := store.NewSecret("rnr_")
	acc.runnerToken, acc.runnerTokenID = runner, store.NewID()
	must(t, f.st.CreateRunnerToken(ctx, store.RunnerToken{ID: acc.runnerTokenID, WorkspaceID: acc.userID, Name: "office", TokenHash: runnerHash,
		Prefix: runner[:12], CreatedAt: f.now}))
	acc.clientID = "c_" + strings.ReplaceAll(store.NewID(), "-", "")
	must(t, f.st.CreateClient(ctx, store.OAuthClient{ID: acc.clientID, Name: "Test client", RedirectURIs: []string{"http://127.0.0.1/cb"},
		GrantTypes: []string{"authorization_code", "refresh_token"}, AuthMethod: "none", Scope: "mcp:read", CreatedAt: f.now}))
	must(t, f.st.SaveConsent(ctx, store.Consent{UserID: acc.userID, ClientID: acc.clientID, Scope: "mcp:read", CreatedAt: f.now}))
	at, atHash := store.NewSecret("at_")
	acc.accessToken = at
	must(t, f.st.CreateTokens(ctx, store.OAuthToken{TokenHash: atHash, Kind: store.TokenAccess, ClientID: acc.clientID, UserID: acc.userID,
		FamilyID: store.NewID(), Scope: store.ScopeAll, CreatedAt: f.now, ExpiresAt: f.now.Add(24 * time.Hour)}))
}

func (f *apiFixture) newSite(t testing.TB, userID, name string) string {
	t.Helper()
	s := store.Site{ID: store.NewID(), UserID: userID, Name: name, Domain: "example.test", CreatedAt: f.now}
	must(t, f.st.CreateSite(context.Background(), s))
	return s.ID
}

// recordScan takes a scan of a site through the queue's life cycle to completion with results,
// as the pipeline does, and returns its id.
func (f *apiFixture) recordScan(t testing.TB, siteID string, results []store.PageResult, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	sc := store.Scan{ID: store.NewID(), SiteID: siteID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: at}
	must(t, f.st.EnqueueScan(ctx, sc, store.KindDemo, at))
	job, err := f.st.ClaimJob(ctx, store.KindDemo, "test", at, 0)
	must(t, err)
	must(t, f.st.StartScan(ctx, job.Lease(), len(results), at))
	for _, r := range results {
		must(t, f.st.SavePageResult(ctx, job.Lease(), r))
	}
	must(t, f.st.CompleteScan(ctx, job.Lease(), analysis.ScanScores(results), at.Add(time.Minute)))
	return sc.ID
}

// fixtureResults extracts real Lighthouse results from testdata/psi.
func fixtureResults(t testing.TB, names ...string) []store.PageResult {
	t.Helper()
	var out []store.PageResult
	for _, n := range names {
		body, err := os.ReadFile("../testdata/psi/" + n + ".json")
		must(t, err)
		r, err := lighthouse.ExtractPSI(body)
		must(t, err)
		out = append(out, r)
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// cred is how a request authenticates.
type cred struct {
	bearer string
	cookie string
	// mcpVersion is sent as MCP-Protocol-Version when set.
	mcpVersion string
}

func bearer(token string) cred   { return cred{bearer: token} }
func cookie(session string) cred { return cred{cookie: session} }

// do sends a request to the fixture and returns the response with its body read.
func (f *apiFixture) do(t testing.TB, method, path, contentType, body string, c cred) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.URL+path, strings.NewReader(body))
	must(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	if c.cookie != "" {
		req.AddCookie(&http.Cookie{Name: "session", Value: c.cookie})
	}
	if c.mcpVersion != "" {
		req.Header.Set("MCP-Protocol-Version", c.mcpVersion)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp, string(b)
}
