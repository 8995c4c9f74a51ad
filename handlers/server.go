// Package handlers is SitePulse's HTTP surface: every route is registered in routes.go. It
// composes the store, the scanner, the OAuth server and the MCP server; the pages it renders
// are html/template files embedded from templates/, styled by one embedded stylesheet.
package handlers

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sitepulse/handlers/beacon"
	"sitepulse/handlers/metrics"
	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/oidc"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/platform"
	"sitepulse/securitylog"
	"sitepulse/store"
)

// Deps is what the HTTP surface needs: the components run() built, handed in. Zero values of
// the settings get sensible defaults in NewHandler; the stores, OAuth and MCP are required.
type Deps struct {
	// The store, one narrow interface per surface, each declared beside the handlers that use
	// it; run() hands the same whole store to every one.
	Auth        AuthStore      // the visitor (sessions, API keys) and their role (authorize.go)
	Accounts    AccountStore   // sign-up, login, settings
	Sites       SiteStore      // the home page, the site form and page, Scan now
	Budgets     BudgetStore    // the budgets and alert rules page
	Scans       ScanStore      // the scan page, its progress stream, the page detail
	Reports     ReportStore    // the reports list and the public report page
	API         APIStore       // the CI budget check and the export
	Webhooks    WebhookStore   // the platform's publish webhook
	Connections PlatformStore  // connecting sites from the platform
	Workspaces  WorkspaceStore // the workspace pages and invitations
	Channels    ChannelStore   // the notifications page: alert channels and deliveries
	Health      HealthStore    // /healthz
	CI          CIStore        // CI pipelines: scans started and followed, budget checks waited for
	Runners     RunnerStore    // runners (docs/runners.md): their tokens, leases and results; nil: off
	// Beacons is the beacon's store (field_beacon.go): the snippet's public id and the
	// ingest's reads and writes; nil turns the beacon off (its ingest answers 503).
	Beacons BeaconStore
	// Beacon is the ingest run() built and flushes (BEACON_* settings); nil with Beacons set
	// makes one that writes each beacon at once.
	Beacon      *beacon.Ingest
	SecurityLog SecurityLogStore // the workspace's audit log page and its exports
	// Recorder appends to the security log (docs/audit-log.md); run() builds it once. Nil: one
	// is made over SecurityLog with this handler's clock and log.
	Recorder *securitylog.Recorder
	// LogRetentionDays is AUDIT_LOG_RETENTION_DAYS, for the audit log page to state; 0 means
	// store.DefaultLogRetentionDays.
	LogRetentionDays int
	// Field is the field data beside the lab (field.go); nil: every site says it has none.
	Field store.FieldReads
	Log   *slog.Logger
	// BaseURL is the interface's {base_url}: scheme and host, no trailing slash.
	BaseURL string
	// Now is the clock; tests inject one.
	Now func() time.Time
	// PasswordIterations is the PBKDF2 work factor for new hashes (store.PasswordIterations).
	PasswordIterations int
	// OAuth is the authorization server behind the OAuth routes and the consent page; the MCP
	// endpoint accepts the access tokens it issues.
	OAuth *oauth.Server
	// MCP answers the JSON-RPC calls of /api/mcp.
	MCP *mcp.Server
	// ScanPollInterval is how often the scan progress stream reads the scan; 0 means the
	// interface's 2 s. Tests shorten it.
	ScanPollInterval time.Duration
	// PlatformSecret is PLATFORM_CLIENT_SECRET, the HMAC key of the publish webhook; empty
	// makes the webhook answer 503 rather than accept unsigned posts.
	PlatformSecret string
	// DemoWebhookSecret, when set, also signs publishes of the demo site (DemoPlatformID) and
	// nothing else: the demo's secret (derived from AUTH_KEY, else made up per process), printed in its webhook line. Without
	// PlatformSecret it signs every publish, as the demo's in-memory service has no other.
	DemoWebhookSecret string
	DemoPlatformID    string
	// SessionIdle is SESSION_IDLE_MINUTES: a session unused this long ends; 0 means 7 days.
	SessionIdle time.Duration
	// MaxSitesPerWorkspace is MAX_SITES_PER_WORKSPACE, the most sites one workspace may have;
	// 0 means 50.
	MaxSitesPerWorkspace int
	// MaxWorkspacesPerUser is MAX_WORKSPACES_PER_USER, the most workspaces one account may own;
	// 0 means 10.
	MaxWorkspacesPerUser int
	// SiteRules are the store's rules of a site (SCAN_ALLOW_PRIVATE, MAX_PAGES_PER_SCAN), for
	// the pages to state them; the store checks them on every write.
	SiteRules store.SiteRules
	// Platform connects sites from the platform; nil when PLATFORM_CLIENT_ID is not
	// set, and the UI says connecting is off.
	Platform *platform.Connector
	// ChannelKeys seal alert channel URLs and secrets (PLATFORM_TOKEN_KEY); nil when Postgres
	// runs without the key, and the Notifications page says channels cannot be saved.
	ChannelKeys *platform.Keys
	// SignedInAudits is AUDIT_BACKEND=lighthouse: sites may have access settings and be audited
	// signed in (DESIGN §17). PSI cannot, so with it a setting is refused.
	SignedInAudits bool
	// Guard is the outbound guard alert channels are checked against at save and sent through.
	Guard netguard.Guard
	// ChannelAllowHTTP lets a channel URL be plain http (SCAN_ALLOW_PRIVATE, and tests); https
	// otherwise.
	ChannelAllowHTTP bool
	// PlatformClientID and PlatformAuthorizeURL build the authorize redirect.
	PlatformClientID     string
	PlatformAuthorizeURL string
	// Replayed answers whether a site's audits are replayed from recorded Lighthouse runs (the
	// demo site, see scanner.Replay), for the "replay" label; nil labels none.
	Replayed func(store.Site) bool
	// WebhookJitter delays each webhook scan (0-5 s); nil picks one at random. Tests inject one.
	WebhookJitter func() time.Duration
	// Mail sends an e-mail (sign-up, reset and e-mail change links, notices of account changes,
	// the workspace invitations): in the service it enqueues the message as a job on the queue
	// (notify.AccountMails), so it returns at once and a shutdown loses nothing; nil logs the
	// account messages instead (no SMTP_ADDR), and an invitation link is only shown to its inviter.
	Mail func(ctx context.Context, to, subject, body string) error
	// AuthKey is AUTH_KEY, the secret that device cookies are signed and sign-up links sealed
	// with (keys derived from it); nil makes a random one, which lasts only for this process.
	AuthKey []byte
	// MaxEventStreams caps the live progress streams of the process; 0 means 1000. A session
	// has at most 10.
	MaxEventStreams int
	// AccountLogins caps the failed logins of one account across every address, counted in the
	// store; zero means 100 a day, then one a minute.
	AccountLogins store.LoginLimit
	// Quota is the workspaces' daily audit budget (USER_DAILY_AUDITS) a pipeline's scan is
	// admitted under; nil admits every scan.
	Quota ScanQuota
	// ScanWake receives when the store announces a job (store.JobWaker: every scan that
	// finishes enqueues one), waking the budget checks that wait for scans; nil leaves them
	// to their fallback read every 10 s.
	ScanWake <-chan struct{}
	// Stopping is closed when the server begins to shut down (http.Server.RegisterOnShutdown):
	// a budget check waiting for a scan answers 202 at once rather than be cut off. Nil: never.
	Stopping <-chan struct{}
	// NewTimer makes the timers of the budget checks' waits; nil is time.NewTimer. Tests
	// inject a fake clock's.
	NewTimer func(time.Duration) (<-chan time.Time, func() bool)
	// MaxWaits caps the budget checks waiting for scans at once; 0 means 1000 (and 50 per
	// workspace, 100 per account, the last tenth for accounts with none waiting).
	MaxWaits int
	// Metrics counts the requests and answers /metrics; nil makes one for this handler.
	Metrics *metrics.Metrics
	// MetricsToken is METRICS_TOKEN: the bearer token of /metrics on this listener; empty, the
	// main listener has no /metrics (METRICS_ADDR may serve it apart).
	MetricsToken string
	// SSO keeps identities at the OpenID provider and the workspaces' single sign-on rules.
	SSO SSOStore
	// SSOProvider is the OpenID provider the operator configured (OIDC_ISSUER); nil: no
	// single sign-on, and the login page offers none.
	SSOProvider *oidc.Client
	// SSOName is the provider's name on the "Sign in with" button (OIDC_NAME).
	SSOName string
	// SSORecheck is SSO_RECHECK_MINUTES: how often a single sign-on session, and the API keys
	// and OAuth tokens of a member a workspace requires SSO of, ask the provider again whether
	// it still vouches for the person; 0 means 8 hours.
	SSORecheck time.Duration
	// SSOBreakGlass lists the workspaces whose SSO requirement is suspended (SSO_BREAK_GLASS),
	// for an owner the provider locked out.
	SSOBreakGlass map[string]bool
	// SSOResolver looks up a domain's TXT records for its verification; nil is net.DefaultResolver.
	SSOResolver TXTResolver
	// SSOAllowHTTP lets a workspace's own provider be plain http (SCAN_ALLOW_PRIVATE, tests).
	SSOAllowHTTP bool
	// RunnerLease is RUNNER_LEASE_SECONDS: how long a runner's lease lasts without a heartbeat;
	// 0 means DefaultRunnerLease.
	RunnerLease time.Duration
	// OpsOnly is -role worker: the process serves its health, readiness and metrics, and no
	// UI or API.
	OpsOnly bool
}

// server holds the dependencies every handler shares.
type server struct {
	Deps
	base          *url.URL
	secure        bool // BaseURL is https: Secure, __Host- cookies and HSTS
	cookieName    string
	pages         *pages
	tokens        AccessTokens // the OAuth server's; tests put in their own
	loginIP       *limiter
	loginPair     *limiter // per (account, address)
	mailIP        *limiter // requests that e-mail an address: sign-up, "Forgot password"
	registerIP    *limiter // dynamic client registration
	revokeIP      *limiter // token revocation (RFC 7009 §5)
	deviceLimit   *limiter // per device cookie: its attempts are not counted against the account
	deviceKey     []byte
	scanFeeds     *scanHub       // the pollers of live progress streams
	metadataIP    *limiter       // authorization requests that name a Client ID Metadata Document URL
	budgetAnswers budgetAnswers  // budget.go
	waiters       *scanWaiters   // the budget checks waiting for scans (waiters.go)
	ssoRules      *ruleCache     // workspaces' single sign-on rules (sso_rule.go)
	wsProviders   *providerCache // workspaces' own providers' relying parties (sso_workspace.go)
}

// NewHandler returns the whole service as one http.Handler.
func NewHandler(d Deps) (http.Handler, error) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Replayed == nil {
		d.Replayed = func(store.Site) bool { return false }
	}
	if d.WebhookJitter == nil {
		d.WebhookJitter = randomJitter
	}
	if d.SessionIdle <= 0 {
		d.SessionIdle = 7 * 24 * time.Hour
	}
	if d.MaxSitesPerWorkspace <= 0 {
		d.MaxSitesPerWorkspace = store.DefaultMaxSites
	}
	if d.MaxWorkspacesPerUser <= 0 {
		d.MaxWorkspacesPerUser = 10
	}
	if d.AccountLogins == (store.LoginLimit{}) {
		d.AccountLogins = store.LoginLimit{Burst: 100, Window: 24 * time.Hour, Every: time.Minute}
	}
	if len(d.AuthKey) == 0 {
		d.AuthKey = make([]byte, 32)
		rand.Read(d.AuthKey)
	}
	if d.Metrics == nil {
		d.Metrics = &metrics.Metrics{}
	}
	if d.SSORecheck <= 0 {
		d.SSORecheck = 8 * time.Hour
	}
	if d.Beacon == nil && d.Beacons != nil {
		d.Beacon = beacon.New(d.Beacons, beacon.Options{Now: d.Now, Log: d.Log})
	}
	if d.PasswordIterations == 0 {
		d.PasswordIterations = store.PasswordIterations
	}
	d.BaseURL = strings.TrimRight(d.BaseURL, "/")
	base, err := url.Parse(d.BaseURL)
	if err != nil {
		return nil, err
	}
	if d.OAuth == nil || d.MCP == nil {
		return nil, errors.New("handlers: OAuth and MCP are required")
	}
	for _, dep := range []struct {
		name string
		v    any
	}{{"Auth", d.Auth}, {"Accounts", d.Accounts}, {"Sites", d.Sites}, {"Budgets", d.Budgets}, {"Scans", d.Scans},
		{"Reports", d.Reports}, {"API", d.API}, {"Webhooks", d.Webhooks}, {"Connections", d.Connections},
		{"Workspaces", d.Workspaces}, {"Channels", d.Channels}, {"Health", d.Health}, {"CI", d.CI}, {"SSO", d.SSO}, {"SecurityLog", d.SecurityLog}} {
		if dep.v == nil { // a nil interface field stays nil as any
			return nil, errors.New("handlers: Deps." + dep.name + " is required (run() hands the store to every surface)")
		}
	}
	if d.LogRetentionDays <= 0 {
		d.LogRetentionDays = store.DefaultLogRetentionDays
	}
	if d.Recorder == nil {
		d.Recorder = &securitylog.Recorder{Store: d.SecurityLog, Now: d.Now, Log: d.Log}
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &server{
		Deps:        d,
		base:        base,
		secure:      base.Scheme == "https",
		pages:       pg,
		tokens:      d.OAuth,
		loginIP:     newLimiter(20, time.Minute/10, d.Now), // 20 failures, then one per 6 s
		loginPair:   newLimiter(10, time.Minute, d.Now),    // 10 failures for one account from one address, then one a minute
		mailIP:      newLimiter(10, 6*time.Minute, d.Now),  // 10 sign-ups or resets, then one per 6 min
		registerIP:  newLimiter(30, 10*time.Second, d.Now), // 30 registrations, then one per 10 s
		revokeIP:    newLimiter(60, time.Second, d.Now),    // 60 revocations, then one a second
		deviceLimit: newLimiter(10, time.Minute, d.Now),    // 10 failures from one known browser, then one a minute
		deviceKey:   deriveKey(d.AuthKey, "device cookie"),
		metadataIP:  newLimiter(30, 2*time.Second, d.Now), // 30 metadata-document requests, then one per 2 s
	}
	interval := d.ScanPollInterval
	if interval <= 0 {
		interval = defaultScanPoll
	}
	if d.MaxEventStreams <= 0 {
		d.MaxEventStreams = defaultMaxStreams
	}
	s.scanFeeds = newScanHub(s.readScanEvent, realTicker, interval, maxStreamsPerSession, d.MaxEventStreams)
	s.scanFeeds.log = d.Log
	if s.NewTimer == nil {
		s.NewTimer = realTimer
	}
	if s.MaxWaits <= 0 {
		s.MaxWaits = defaultMaxWaiters
	}
	s.waiters = newScanWaiters(d.CI.ScansByID, d.ScanWake, d.Stopping, s.NewTimer, s.MaxWaits, d.Log)
	s.ssoRules = &ruleCache{m: map[string]cachedRule{}}
	s.wsProviders = &providerCache{m: map[string]cachedProvider{}}
	s.cookieName = "session"
	if s.secure {
		s.cookieName = "__Host-session"
	}
	if d.Mail == nil {
		d.Log.Warn("SMTP_ADDR not set: account e-mails (sign-up, password reset and e-mail change links) are written to this log at INFO, " +
			"links included, so that this server stays usable without e-mail; whoever reads the log can use them. Set SMTP_ADDR on a public service.")
	}
	mux := http.NewServeMux()
	s.addRoutes(mux)
	return s.middleware(mux), nil
}
