package main

import (
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"

	"sitepulse/oidc"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// config is the service settings: environment variables, each mirrored by a flag that wins over it.
type config struct {
	Addr            string
	BaseURL         string
	DatabaseURL     string
	DatabaseDirect  string
	DBMaxConns      int
	PageSpeedURL    string
	PageSpeedKey    string
	AuditBackend    string
	LighthouseCmd   string
	ChromePath      string
	ChromeFlags     string
	PlatformSecret  string
	PlatformID      string
	PlatformAuthURL string
	PlatformAPIURL  string
	PlatformKey     string
	AuthKey         string
	SMTPAddr        string
	SMTPFrom        string
	SMTPUsername    string
	SMTPPassword    string
	ScanWorkers     int
	WorkspaceScans  int
	ScanLease       int
	MaxPagesPerScan int
	PSIRateLimit    int
	PSIMaxInFlight  int
	LHConcurrency   int
	RunnerLease     int
	PSIDailyLimit   int
	CruxURL         string
	CruxDaily       int
	PSIBreakerFails int
	PSIBreakerSecs  int
	// ScanAllowPrivate lets scans fetch internal addresses: for self-hosters who
	// audit intranet or staging sites.
	ScanAllowPrivate     bool
	MaxSitesPerWorkspace int
	MaxWorkspaces        int
	UserDailyAudits      int
	AccountAuditShare    int
	AuditShareMark       int
	NewcomerReserve      int
	SessionIdleMins      int
	// The beacon's ingest (docs/field.md "The beacon").
	BeaconDailyCap   int
	BeaconSiteRate   int
	BeaconAddrRate   int
	BeaconFlushMS    int
	AuditLogDays     int // AUDIT_LOG_RETENTION_DAYS
	ConfirmRuns      int
	ScanDeadline     int
	SchedulePoll     int
	DiscoveryTimeout int
	LogLevel         string
	Demo             bool
	// Role is web (UI and API, no jobs claimed), worker (jobs; only health, readiness and
	// metrics served) or all.
	Role         string
	MetricsAddr  string
	MetricsToken string
	// Single sign-on (docs/sso.md): the operator's OpenID provider.
	OIDCIssuer       string
	OIDCClientID     string
	OIDCClientSecret string
	OIDCName         string
	SSORecheckMins   int
	SSOBreakGlass    string
	// Version is -version: print the version and exit.
	Version bool
}

// siteRules are the rules of a site that depend on the configuration.
func (c config) siteRules() store.SiteRules {
	return store.SiteRules{AllowPrivate: c.ScanAllowPrivate, MaxPages: c.MaxPagesPerScan}
}

// auditLimits are the daily audit budgets: USER_DAILY_AUDITS a workspace, ACCOUNT_AUDIT_SHARE
// percent of PSI_DAILY_LIMIT an account across its workspaces, and the key's day shared past
// AUDIT_SHARE_MARK percent of it with NEWCOMER_RESERVE percent kept for accounts that had not
// audited, each of those granted a first scan's audits (every page, both strategies).
func (c config) auditLimits() store.AuditLimits {
	return store.AuditLimits{Workspace: c.UserDailyAudits, Account: max(1, c.PSIDailyLimit*c.AccountAuditShare/100),
		Day: c.PSIDailyLimit, Mark: c.PSIDailyLimit * c.AuditShareMark / 100, Reserve: c.PSIDailyLimit * c.NewcomerReserve / 100,
		Newcomer: 2 * c.MaxPagesPerScan}
}

// setting is one configuration value: its variable, flag, default and meaning. The table is the
// one place that lists them; the table of docs/configuration.md mirrors it.
type setting struct {
	env, def, help string
	str            *string
	num            *int
	boolean        *bool
	min            int
	// secret values are read from the environment but never shown as a flag default in -h.
	secret bool
	// alias is an older name of the variable, still read when env is unset.
	alias string
}

func (c *config) settings() []setting {
	return []setting{
		{env: "ADDR", def: ":8080", help: "listen address", str: &c.Addr},
		{env: "ROLE", def: "all", help: "web (serves the UI and APIs, claims no jobs), worker (claims and runs jobs: scans, alerts, deliveries, e-mails; serves only /healthz, /readyz and /metrics), all, or runner (runs audits leased from a service: sitepulse runner, docs/runners.md)", str: &c.Role},
		{env: "METRICS_ADDR", help: "listen address of a separate listener serving only /metrics, unauthenticated (keep it private, such as 127.0.0.1:9090); empty: none", str: &c.MetricsAddr},
		{env: "METRICS_TOKEN", help: "bearer token of /metrics on the main listener; empty: the main listener has no /metrics", str: &c.MetricsToken, secret: true},
		{env: "BASE_URL", help: "public base URL: OAuth issuer, report links (default: http:// and ADDR, a wildcard host as localhost)", str: &c.BaseURL},
		{env: "DATABASE_URL", help: "Postgres DSN; empty runs on the in-memory store", str: &c.DatabaseURL, secret: true},
		{env: "DATABASE_DIRECT_URL", help: "Postgres DSN of the same database that bypasses a connection pooler, for the migrations and the LISTEN of job wake-ups (default DATABASE_URL); behind a transaction pooler without it, wake-ups poll", str: &c.DatabaseDirect, secret: true},
		{env: "DATABASE_MAX_CONNS", def: "20", help: "Postgres connections this process may open (plus one for job notifications); replicas x (this + 1) + headroom must fit in max_connections", num: &c.DBMaxConns, min: 1},
		{env: "PAGESPEED_API_URL", def: "https://www.googleapis.com/pagespeedonline/v5/runPagespeed", help: "PageSpeed Insights endpoint", str: &c.PageSpeedURL},
		{env: "PAGESPEED_API_KEY", help: "Google API key of PageSpeed Insights and of the weekly CrUX history: the same key serves both once the Chrome UX Report API is enabled on its Google Cloud project; empty: CrUX history is off (the demo site's is served offline)", str: &c.PageSpeedKey, secret: true},
		{env: "AUDIT_BACKEND", def: "psi", help: "psi or lighthouse", str: &c.AuditBackend},
		{env: "LIGHTHOUSE_CMD", def: "lighthouse", help: "Lighthouse CLI for AUDIT_BACKEND=lighthouse", str: &c.LighthouseCmd},
		{env: "CHROME_PATH", help: "Chrome or Chromium binary for Lighthouse", str: &c.ChromePath},
		{env: "LIGHTHOUSE_CHROME_FLAGS", def: "--headless=new --disable-gpu --no-first-run", help: "Chrome flags for Lighthouse runs (add --no-sandbox as root)", str: &c.ChromeFlags},
		{env: "LIGHTHOUSE_CONCURRENCY", def: "1", help: "Lighthouse runs at once for AUDIT_BACKEND=lighthouse, shared fairly by all scans (Chrome runs are CPU-bound and skew each other's metrics)", num: &c.LHConcurrency, min: 1},
		{env: "RUNNER_LEASE_SECONDS", def: "120", help: "seconds a runner's lease on an audit lasts without a heartbeat; then the audit goes back to the queue for another runner (docs/runners.md)", num: &c.RunnerLease, min: 2},
		{env: "PLATFORM_CLIENT_SECRET", help: "the platform app's client secret: the code exchange, and the HMAC key of the publish webhook's x-platform-signature or Webflow's x-webflow-signature", str: &c.PlatformSecret, secret: true},
		{env: "PLATFORM_CLIENT_ID", help: "the platform app's client id; empty turns connecting sites from the platform off", str: &c.PlatformID},
		{env: "PLATFORM_AUTHORIZE_URL", def: "https://webflow.com/oauth/authorize", help: "the platform's OAuth authorize page", str: &c.PlatformAuthURL},
		{env: "PLATFORM_API_URL", def: "https://api.webflow.com", help: "the platform's API origin: {it}/oauth/access_token and {it}/v2/...", str: &c.PlatformAPIURL},
		{env: "PLATFORM_TOKEN_KEY", help: "AES-256-GCM keys sealing platform tokens, alert channel URLs and sites' access settings at rest: base64 32-byte keys, comma-separated, the first seals (openssl rand -base64 32)", str: &c.PlatformKey, secret: true},
		{env: "AUTH_KEY", help: "base64 key of at least 32 bytes signing device cookies (a browser that signed in before is not counted against an account's failed-login cap), sealing the queued account e-mails and deriving the demo's credentials; the same on every replica; empty: a random key for this process (openssl rand -base64 32)", str: &c.AuthKey, secret: true},
		{env: "SMTP_ADDR", help: "host:port of the SMTP server; empty logs digests and sign-up messages instead", str: &c.SMTPAddr},
		{env: "SMTP_FROM", def: "SitePulse <sitepulse@localhost>", help: "From address of digest and sign-up e-mails", str: &c.SMTPFrom},
		{env: "SMTP_USERNAME", help: "SMTP user (PLAIN auth)", str: &c.SMTPUsername},
		{env: "SMTP_PASSWORD", help: "SMTP password", str: &c.SMTPPassword, secret: true},
		{env: "SCAN_WORKERS", def: "3", help: "scans audited at once by this process", num: &c.ScanWorkers, min: 1},
		{env: "SCANS_PER_WORKSPACE", def: "2", help: "scans one workspace, and one account across the workspaces it owns, may have running at once in this process; its other scans wait while other accounts' are claimed (keep it below SCAN_WORKERS, so every process keeps a worker for other accounts)", num: &c.WorkspaceScans, min: 1},
		{env: "SCAN_LEASE_SECONDS", def: "120", help: "seconds a running scan may go without a heartbeat before another process takes it over", num: &c.ScanLease, min: 2},
		{env: "SCAN_DEADLINE_SECONDS", def: "1800", help: "seconds after its start a scan not yet complete is failed with the reason, freeing its site", num: &c.ScanDeadline, min: 1},
		{env: "SCHEDULE_POLL_SECONDS", def: "60", help: "how often this process's scheduler enqueues the scans of sites whose daily or weekly scan is due", num: &c.SchedulePoll, min: 1},
		{env: "MAX_PAGES_PER_SCAN", def: strconv.Itoa(store.DefaultMaxPages), help: "most pages a scan audits and a site saves (the site form refuses more)", num: &c.MaxPagesPerScan, min: 1},
		{env: "DISCOVERY_TIMEOUT_SECONDS", def: "30", help: "seconds one scan may spend reading its site's sitemap and child sitemaps; past it, the pages found are audited", num: &c.DiscoveryTimeout, min: 1},
		{env: "PSI_RATE_LIMIT", def: "400", help: "PSI calls per 100 seconds, shared by all workers of this process", num: &c.PSIRateLimit, min: 1},
		{env: "PSI_MAX_INFLIGHT", def: "64", help: "PSI audits in flight at once, shared fairly by all scans of this process; a 429 lowers it (and the rate) for a while", num: &c.PSIMaxInFlight, min: 1},
		{env: "PSI_DAILY_LIMIT", def: "25000", help: "PSI calls per quota day (to midnight America/Los_Angeles), shared by all workers of this process; reaching it pauses scans until the reset", num: &c.PSIDailyLimit, min: 1},
		{env: "CRUX_API_URL", def: "https://chromeuxreport.googleapis.com/v1/records:queryHistoryRecord", help: "CrUX History API endpoint (queryHistoryRecord), called with PAGESPEED_API_KEY", str: &c.CruxURL},
		{env: "CRUX_DAILY_REQUESTS", def: "216000", help: "CrUX History API calls per UTC day, shared by the weekly CrUX refreshes of this process (the default is the API's quota, 150 a minute, for a whole day); reaching it holds the refreshes until the next day", num: &c.CruxDaily, min: 1},
		{env: "PSI_BREAKER_FAILURES", def: "5", help: "consecutive audits finding PSI in trouble (5xx, timeouts, network) that open the PSI breaker", num: &c.PSIBreakerFails, min: 1},
		{env: "REGRESSION_CONFIRM_RUNS", def: "2", help: "re-audits of a page whose audit regressed against the previous scan, the median run kept; 0 turns confirmation off", num: &c.ConfirmRuns},
		{env: "SCAN_ALLOW_PRIVATE", def: "false", help: "true lets scans fetch loopback, private and link-local addresses (intranet or staging sites); never on a multi-tenant service", boolean: &c.ScanAllowPrivate},
		{env: "MAX_SITES_PER_WORKSPACE", def: strconv.Itoa(store.DefaultMaxSites), help: "sites one workspace may have, 2,000 being the size measured (MAX_SITES_PER_USER, its former name, is still read)", num: &c.MaxSitesPerWorkspace, min: 1, alias: "MAX_SITES_PER_USER"},
		{env: "MAX_WORKSPACES_PER_USER", def: "10", help: "workspaces one account may own, its personal one included", num: &c.MaxWorkspaces, min: 1},
		{env: "USER_DAILY_AUDITS", def: "0", help: "audits the scans of one workspace may make per UTC day (counted in the store, so shared by every replica); past it, its scans wait for the next day; 0 follows the caps: MAX_SITES_PER_WORKSPACE x MAX_PAGES_PER_SCAN x 2 strategies x 1.2 for re-audits", num: &c.UserDailyAudits, min: 0},
		{env: "ACCOUNT_AUDIT_SHARE", def: "30", help: "percent of PSI_DAILY_LIMIT one account's audits may use per UTC day, across every workspace it owns (and any it created that day): counted in the store, kept when a workspace is deleted; past it, those workspaces' scans wait for the next day", num: &c.AccountAuditShare, min: 1},
		{env: "AUDIT_SHARE_MARK", def: "70", help: "percent of PSI_DAILY_LIMIT every account's audits of a UTC day (counted in the store, across replicas) reach before what is left is shared: past it, each account that audited that day may take an equal share of what is left above NEWCOMER_RESERVE; 100 (with NEWCOMER_RESERVE 0) shares nothing out, the day ending at PSI_DAILY_LIMIT", num: &c.AuditShareMark},
		{env: "NEWCOMER_RESERVE", def: "10", help: "percent of PSI_DAILY_LIMIT kept, at the end of each UTC day, for accounts that had not audited before AUDIT_SHARE_MARK: each may take a first scan's audits (MAX_PAGES_PER_SCAN x 2) from it", num: &c.NewcomerReserve},
		{env: "BEACON_DAILY_CAP", def: "100000", help: "beacons one site keeps per UTC day before sampling: past it one in 2 is kept (counting 2), past twice it one in 4, and so on, so the p75 holds and storage stays bounded; counted in the store across every process, so replicas and restarts share it", num: &c.BeaconDailyCap, min: 1},
		{env: "BEACON_SITE_RATE", def: "2000", help: "beacons a second one site may send to this process (bursts of 5 seconds' worth); past it, 429; per process, so N web processes admit N times it (the daily cap is shared)", num: &c.BeaconSiteRate, min: 1},
		{env: "BEACON_ADDR_RATE", def: "2", help: "beacons a second one address may send to this process (bursts of 30); past it, 429; per process; the address is held in memory for the limit only, never stored", num: &c.BeaconAddrRate, min: 1},
		{env: "BEACON_FLUSH_MS", def: "1000", help: "milliseconds between the beacon ingest's batched writes; a crash loses at most this long's accepted beacons", num: &c.BeaconFlushMS, min: 1},
		{env: "SESSION_IDLE_MINUTES", def: "10080", help: "minutes without a request after which a browser session ends (default 7 days; sessions end after 30 days regardless)", num: &c.SessionIdleMins, min: 1},
		{env: "AUDIT_LOG_RETENTION_DAYS", def: "400", help: "days the security log (docs/audit-log.md) keeps a line; the pruner deletes older ones, the log's only delete", num: &c.AuditLogDays, min: 1},
		{env: "PSI_BREAKER_SECONDS", def: "60", help: "seconds the PSI breaker stays open before one probe audit", num: &c.PSIBreakerSecs, min: 1},
		{env: "OIDC_ISSUER", help: "issuer URL of the OpenID provider people may sign in with (docs/sso.md), exactly as its discovery document names it; empty: no single sign-on", str: &c.OIDCIssuer},
		{env: "OIDC_CLIENT_ID", help: "SitePulse's client id at the OpenID provider", str: &c.OIDCClientID},
		{env: "OIDC_CLIENT_SECRET", help: "SitePulse's client secret at the OpenID provider", str: &c.OIDCClientSecret, secret: true},
		{env: "OIDC_NAME", def: "SSO", help: "the provider's name on the login page's \"Sign in with ...\" button", str: &c.OIDCName},
		{env: "SSO_RECHECK_MINUTES", def: "480", help: "minutes after which a single sign-on session (and the API keys and OAuth tokens of members a workspace requires SSO of) asks the provider again whether it still vouches for the person; a refusal ends their sessions", num: &c.SSORecheckMins, min: 1},
		{env: "SSO_BREAK_GLASS", help: "comma-separated workspace ids whose single sign-on requirement is suspended, for owners the provider locked out (docs/sso.md)", str: &c.SSOBreakGlass},
		{env: "LOG_LEVEL", def: "INFO", help: "DEBUG, INFO, WARN or ERROR; DEBUG adds one line per HTTP request", str: &c.LogLevel},
	}
}

// loadConfig reads the environment, then the flags. A malformed value is an error naming it.
func loadConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("sitepulse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	raw := map[string]*string{}
	for _, s := range c.settings() {
		v := getenv(s.env)
		if v == "" && s.alias != "" {
			v = getenv(s.alias)
		}
		if v == "" {
			v = s.def
		}
		if s.secret { // the environment's value is taken after parsing, so -h cannot print it
			v = ""
		}
		raw[s.env] = fs.String(strings.ToLower(strings.ReplaceAll(s.env, "_", "-")), v, s.help+" ("+s.env+")")
	}
	fs.BoolVar(&c.Demo, "demo", false, "seed the demo account and site (always on with the in-memory store); safe on every process at once, which all print the same login, key and webhook line when AUTH_KEY is set")
	fs.BoolVar(&c.Version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unknown command %q: the commands are check, the CI budget check (sitepulse check -h), and runner, which runs audits for a service (sitepulse runner -h); without one, sitepulse runs the service (its flags: sitepulse -h)", fs.Arg(0))
	}
	if c.Version {
		return c, nil
	}
	for _, s := range c.settings() {
		v := strings.TrimSpace(*raw[s.env])
		if s.secret && v == "" {
			v = strings.TrimSpace(getenv(s.env))
		}
		if s.str != nil {
			*s.str = v
			continue
		}
		if s.boolean != nil {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return c, fmt.Errorf("%s=%q: want true or false", s.env, v)
			}
			*s.boolean = b
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < s.min {
			return c, fmt.Errorf("%s=%q: want a whole number of at least %d", s.env, v, s.min)
		}
		*s.num = n
	}
	return c, c.validate()
}

func (c *config) validate() error {
	if c.Addr == "" {
		return fmt.Errorf("ADDR is empty: want a listen address such as :8080")
	}
	if c.UserDailyAudits == 0 { // follows the caps: a full workspace scanned daily, with its re-audits
		c.UserDailyAudits = c.MaxSitesPerWorkspace * c.MaxPagesPerScan * 2 * 6 / 5
	}
	if c.Role != "web" && c.Role != "worker" && c.Role != "all" {
		return fmt.Errorf("ROLE=%q: want web, worker or all", c.Role)
	}
	if c.MetricsAddr != "" && c.MetricsAddr == c.Addr {
		return fmt.Errorf("METRICS_ADDR=%q is ADDR: give the metrics listener an address of its own, or leave it empty and set METRICS_TOKEN", c.MetricsAddr)
	}
	if c.BaseURL == "" {
		c.BaseURL = "http://" + localURLHost(c.Addr)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("BASE_URL=%q: want an absolute http(s) URL with no path, such as https://sitepulse.example.com", c.BaseURL)
	}
	if u, err := url.Parse(c.PageSpeedURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("PAGESPEED_API_URL=%q: want an absolute http(s) URL", c.PageSpeedURL)
	}
	for env, v := range map[string]string{"PLATFORM_AUTHORIZE_URL": c.PlatformAuthURL, "PLATFORM_API_URL": c.PlatformAPIURL} {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s=%q: want an absolute http(s) URL", env, v)
		}
	}
	if c.PlatformID != "" && c.PlatformSecret == "" {
		return fmt.Errorf("PLATFORM_CLIENT_ID is set without PLATFORM_CLIENT_SECRET: the code exchange needs both")
	}
	if c.AuditBackend != "psi" && c.AuditBackend != "lighthouse" {
		return fmt.Errorf("AUDIT_BACKEND=%q: want psi or lighthouse", c.AuditBackend)
	}
	for env, v := range map[string]string{"DATABASE_URL": c.DatabaseURL, "DATABASE_DIRECT_URL": c.DatabaseDirect} {
		if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") && !strings.Contains(v, "=") {
			return fmt.Errorf("%s: want a Postgres URL (postgres://user@host/db) or key=value DSN", env)
		}
	}
	if c.AuthKey != "" {
		if k, err := base64.StdEncoding.DecodeString(c.AuthKey); err != nil || len(k) < 32 {
			return fmt.Errorf("AUTH_KEY: want base64 of at least 32 bytes (openssl rand -base64 32)")
		}
	}
	if c.PlatformKey != "" { // checked here, before the address is taken: a bad key is a config error
		if _, err := platform.ParseKeys(c.PlatformKey); err != nil {
			return err
		}
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		return fmt.Errorf("LOG_LEVEL=%q: want DEBUG, INFO, WARN or ERROR", c.LogLevel)
	}
	if c.AccountAuditShare > 100 {
		return fmt.Errorf("ACCOUNT_AUDIT_SHARE=%d: want a percent of PSI_DAILY_LIMIT, 1 to 100", c.AccountAuditShare)
	}
	if c.OIDCIssuer != "" {
		if err := oidc.ValidIssuer(c.OIDCIssuer, c.ScanAllowPrivate); err != nil {
			return fmt.Errorf("OIDC_ISSUER=%q: want the provider's https issuer URL", c.OIDCIssuer)
		}
		if c.OIDCClientID == "" || c.OIDCClientSecret == "" {
			return fmt.Errorf("OIDC_ISSUER is set without OIDC_CLIENT_ID and OIDC_CLIENT_SECRET: the code exchange needs both")
		}
	}
	if c.AuditShareMark > 100 || c.NewcomerReserve > 100 || c.AuditShareMark+c.NewcomerReserve > 100 {
		return fmt.Errorf("AUDIT_SHARE_MARK=%d, NEWCOMER_RESERVE=%d: want percents of PSI_DAILY_LIMIT that add up to at most 100", c.AuditShareMark, c.NewcomerReserve)
	}
	if c.SMTPAddr != "" && !strings.Contains(c.SMTPAddr, ":") {
		return fmt.Errorf("SMTP_ADDR=%q: want host:port", c.SMTPAddr)
	}
	return nil
}

// localURLHost is the host:port a browser on this machine reaches listen address addr at: a
// wildcard or empty host is localhost.
func localURLHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // validate then names BASE_URL
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// ssoProvider is the relying party of OIDC_ISSUER, its requests through the outbound guard;
// nil without one.
func (c config) ssoProvider(guard netguard.Guard) *oidc.Client {
	if c.OIDCIssuer == "" {
		return nil
	}
	return oidc.New(oidc.Config{Issuer: c.OIDCIssuer, ClientID: c.OIDCClientID, ClientSecret: c.OIDCClientSecret,
		RedirectURL: c.BaseURL + "/login/sso/callback", HTTP: guard.Client(), AllowHTTP: c.ScanAllowPrivate})
}

// breakGlass is SSO_BREAK_GLASS as a set of workspace ids.
func (c config) breakGlass() map[string]bool {
	m := map[string]bool{}
	for _, id := range strings.Split(c.SSOBreakGlass, ",") {
		if id = strings.ToLower(strings.TrimSpace(id)); id != "" {
			m[id] = true
		}
	}
	return m
}
