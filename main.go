// Command sitepulse is the SitePulse service: Lighthouse audits of every publish, served to CI
// (budget check), people (web UI, exports, reports) and AI clients (MCP behind OAuth 2.1).
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"sitepulse/handlers"
	"sitepulse/handlers/beacon"
	"sitepulse/handlers/ci"
	"sitepulse/handlers/metrics"
	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/scanner"
	"sitepulse/scanner/crux"
	"sitepulse/scanner/crux/cruxtest"
	"sitepulse/scanner/demo"
	"sitepulse/scanner/discover"
	"sitepulse/scanner/lighthouse"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/runner"
	"sitepulse/securitylog"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/postgres"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		os.Exit(exitStatus(err, os.Stderr))
	}
}

// exitStatus prints why run failed and answers the process's exit status: an exitCode's own
// (sitepulse check: 1 budgets broken, 2 could not judge), else 1.
func exitStatus(err error, stderr io.Writer) int {
	var exit *ci.ExitCode
	if errors.As(err, &exit) {
		if exit.Err != nil {
			fmt.Fprintln(stderr, "sitepulse check:", exit.Err)
		}
		return exit.Code
	}
	fmt.Fprintln(stderr, "sitepulse:", err)
	return 1
}

// run wires the service and serves until ctx ends, then shuts down in order: HTTP server
// (in-flight requests finish), scanner, store. `sitepulse check ...` is the CI client instead
// (handlers/ci).
//
// What starts is the table below, in order; each step may leave something to stop, and what
// was started is stopped in the reverse order when run returns.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "check" {
		return ci.RunCheck(ctx, args[1:], getenv, stdout)
	}
	// The third role (docs/runners.md): audits run where the runner stands, leased from a
	// service over HTTPS. `sitepulse runner`, or ROLE=runner for a container's environment.
	if len(args) > 0 && args[0] == "runner" {
		return runner.Main(ctx, args[1:], getenv, stdout)
	}
	if len(args) > 0 && args[0] == "runner-token" {
		return runnerTokenCommand(ctx, args[1:], getenv, stdout)
	}
	if getenv("ROLE") == "runner" {
		return runner.Main(ctx, args, getenv, stdout)
	}
	cfg, err := loadConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	if cfg.Version {
		fmt.Fprintln(stdout, "sitepulse", version())
		return nil
	}
	sv := &service{cfg: cfg, stdout: stdout,
		log: slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: mustLogLevel(cfg.LogLevel)}))}
	defer sv.stop()
	for _, start := range []func(context.Context) error{
		sv.listen,       // the addresses first: a process that cannot serve prints no demo credentials
		sv.openStore,    // Postgres or memory, and the metrics that read it
		sv.deviceKey,    // AUTH_KEY
		sv.seedDemo,     // the demo account, and the replay of its site's audits
		sv.startScanner, // the job queue's pool: scans, alerts, deliveries, digests
		sv.buildHandler, // every route: web UI, API, CI, OAuth, MCP, metrics
	} {
		if err := start(ctx); err != nil {
			return err
		}
	}
	return sv.serve(ctx)
}

// service is what run starts, handed from one step of its table to the next.
type service struct {
	cfg    config
	log    *slog.Logger
	stdout io.Writer

	ln, mln    net.Listener // the main listener; METRICS_ADDR's, nil without
	st         store.Store
	meter      *metrics.Metrics
	authKey    []byte
	demoSecret string
	replay     *demo.Replay   // the demo site's audits, answered offline; nil without the demo
	beacon     *beacon.Ingest // the real-user beacon's ingest, flushed every BEACON_FLUSH_MS
	field      *demo.Field    // the demo site's recorded field data, over the store's; nil without the demo
	guard      netguard.Guard
	connector  *platform.Connector
	quota      *psi.AccountQuota
	digest     *notify.Digest
	// accountMail enqueues and sends the account e-mails (sign-up, reset, invitations).
	accountMail *notify.AccountMails
	chKeys      *platform.Keys
	recorder    *securitylog.Recorder // the security log's one recorder (docs/audit-log.md)
	scanWake    <-chan struct{}       // the budget check waits' share of the job notifications
	handler     http.Handler
	stopping    chan struct{} // closed when the HTTP server begins to shut down

	stops []func() // what to stop, in the order started
}

// stop stops what the steps started, the last first.
func (sv *service) stop() {
	for i := len(sv.stops) - 1; i >= 0; i-- {
		sv.stops[i]()
	}
}

// listen takes the addresses: a process that cannot serve must not print demo credentials
// that no server will accept.
func (sv *service) listen(context.Context) error {
	ln, err := listen(sv.cfg.Addr)
	if err != nil {
		return err
	}
	sv.ln = ln
	sv.stops = append(sv.stops, func() { ln.Close() }) // on an early return; Serve and Shutdown close it otherwise
	if sv.cfg.MetricsAddr != "" {
		mln, err := listen(sv.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("METRICS_ADDR: %w", err)
		}
		sv.mln = mln
		sv.stops = append(sv.stops, func() { mln.Close() })
	}
	return nil
}

// openStore opens the store (closed last) and the metrics that read it.
func (sv *service) openStore(ctx context.Context) error {
	cfg, log := sv.cfg, sv.log
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	sv.st = st
	// Each line appended is also planned for the webhooks subscribed to the audit log.
	sv.recorder = &securitylog.Recorder{Store: st, Now: time.Now, Log: log, Appended: (&notify.AuditPlanner{Store: st, Now: time.Now}).Plan}
	sv.stops = append(sv.stops, func() {
		if err := st.Close(); err != nil {
			log.Warn("close store", "err", err)
		}
		log.Info("store closed")
	})
	log.Info("store ready", "store", st.Name(), "role", cfg.Role)
	if cfg.DatabaseURL != "" {
		log.Info("database connections", "mode", dbMode(cfg))
	}
	sv.meter = &metrics.Metrics{Role: cfg.Role, Version: version(), Jobs: st, Now: time.Now}
	if db, ok := st.(interface{ Stats() sql.DBStats }); ok {
		sv.meter.DB = db.Stats
	}
	return nil
}

// deviceKey reads AUTH_KEY, which signs device cookies (and derives the demo's secrets).
func (sv *service) deviceKey(context.Context) error {
	if sv.cfg.AuthKey != "" {
		sv.authKey, _ = base64.StdEncoding.DecodeString(sv.cfg.AuthKey) // checked by loadConfig
		return nil
	}
	sv.log.Info("AUTH_KEY not set: device cookies are signed with a random key for this process, so browsers count as new after a restart or on another replica")
	return nil
}

// fieldReads are the field reads every surface and the alerts take: the demo's (its recorded
// story over the store's), else the store's CrUX history and beacon figures joined (a half the
// store does not keep answers nothing).
func (sv *service) fieldReads() store.FieldReads {
	if sv.field != nil {
		return sv.field
	}
	beacon, _ := sv.st.(store.BeaconReads)
	return demo.NewField(demo.FieldRecording{}, "", time.Time{}, sv.st, sv.st, beacon)
}

// seedDemo seeds the demo on the in-memory store, or with DEMO=true (demo.go).
func (sv *service) seedDemo(ctx context.Context) error {
	if sv.st.Name() != "memory" && !sv.cfg.Demo {
		return nil
	}
	var err error
	sv.demoSecret, sv.replay, sv.field, err = seedDemo(ctx, sv.st, sv.cfg, sv.authKey, sv.stdout, sv.log)
	return err
}

// startScanner builds the job queue's pool and, unless ROLE=web, starts it; it stops after the
// HTTP server and before the store.
func (sv *service) startScanner(ctx context.Context) error {
	cfg, st, log := sv.cfg, sv.st, sv.log
	// Every fetch made on a user's behalf goes through the guard.
	sv.guard = netguard.Guard{AllowPrivate: cfg.ScanAllowPrivate}
	if cfg.WorkspaceScans >= cfg.ScanWorkers && cfg.ScanWorkers > 1 {
		log.Warn("SCANS_PER_WORKSPACE is not below SCAN_WORKERS: one workspace's scans can hold every scan worker of this process while another's wait",
			"scans_per_workspace", cfg.WorkspaceScans, "scan_workers", cfg.ScanWorkers)
	}
	if sv.guard.AllowPrivate {
		log.Warn("SCAN_ALLOW_PRIVATE=true: scans may fetch loopback, private and link-local addresses; do not run a multi-tenant service this way")
	}
	var err error
	if sv.connector, err = platformConnector(cfg, st, log); err != nil {
		return err
	}
	auditor, capacity := newAuditor(cfg, sv.guard, sv.meter, log)
	field := sv.fieldReads() // the digests' and alerts' field figures
	// One mailer: the regression digests, the sign-up messages and the workspace invitations.
	sv.digest = &notify.Digest{Store: st, SMTPAddr: cfg.SMTPAddr, From: cfg.SMTPFrom, Username: cfg.SMTPUsername,
		Password: cfg.SMTPPassword, BaseURL: cfg.BaseURL, Log: log, Field: field}
	// Account e-mails (links, notices) go out as jobs through the same SMTP sender, their
	// bodies sealed with AUTH_KEY (a random one for this process when it is not set).
	mailKey := sv.authKey
	if len(mailKey) == 0 {
		mailKey = make([]byte, 32)
		rand.Read(mailKey)
	}
	sv.accountMail = &notify.AccountMails{Jobs: st, Key: mailKey, Send: sv.digest.Send, Log: log}
	if sv.chKeys, err = channelKeys(cfg, st, log); err != nil {
		return err
	}
	// One subscription to the store's job notifications, shared: the dispatcher claims on them,
	// and the budget checks waiting for scans wake on them (a finished scan enqueues its alerts).
	wakes := jobWakes(ctx, st, log, 2)
	sv.scanWake = wakes[1]
	if cfg.Role != "worker" { // a worker answers no budget check; its probe does not hold up the start
		go followSiteVersions(ctx, st, log)
	}
	// The demo site's audits are replayed offline; every other site's go to the real auditor.
	// One account's audits stay under its share of the PSI key's day, however many workspaces it has.
	sv.quota = psi.NewAccountQuota(cfg.auditLimits(), st, keyFreeScans(cfg, st))
	log.Info("audit budgets", "workspace_daily", cfg.auditLimits().Workspace, "account_daily", cfg.auditLimits().Account,
		"key_daily", cfg.auditLimits().Day, "shared_past", cfg.auditLimits().Mark, "newcomer_reserve", cfg.auditLimits().Reserve)
	pool := newPool(cfg, st, demo.Replaying(sv.replay, auditor), capacity, sv.quota, sv.guard.Client(), sv.connector, sv.digest, sv.accountMail, sv.chKeys, wakes[0], sv.meter, log,
		cruxRefresher(cfg, st, sv.replay, log), field)
	sv.meter.JobKinds = pool.Kinds()
	// A web process claims no jobs: its pool (workers, scheduler, rescuer, pruner) never starts.
	if cfg.Role != "web" {
		pool.Start()
	} else {
		log.Info("ROLE=web: this process claims no jobs; run processes with ROLE=worker or all to scan, alert and deliver")
	}
	sv.stops = append(sv.stops, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := pool.Stop(stopCtx); err != nil {
			log.Warn("scanner stop", "err", err)
		}
		log.Info("scanner stopped")
	})
	return nil
}

// startBeacon builds the beacon's ingest and flushes it every BEACON_FLUSH_MS; on stop (after
// the HTTP server, before the store) it flushes what it holds.
func (sv *service) startBeacon() {
	cfg := sv.cfg
	sv.beacon = beacon.New(sv.st, beacon.Options{Log: sv.log, FlushEvery: time.Duration(cfg.BeaconFlushMS) * time.Millisecond,
		DailyCap: int64(cfg.BeaconDailyCap), SiteRate: float64(cfg.BeaconSiteRate), AddrRate: float64(cfg.BeaconAddrRate)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sv.beacon.Run(ctx); close(done) }()
	sv.stops = append(sv.stops, func() { cancel(); <-done })
}

// buildHandler builds every route: the authorization server issues the access tokens the MCP
// endpoint accepts, and fetches Client ID Metadata Documents, which anyone can point at any
// URL, through the guard.
func (sv *service) buildHandler(context.Context) error {
	cfg, st, log := sv.cfg, sv.st, sv.log
	authServer := oauth.New(oauth.Config{Store: st, BaseURL: cfg.BaseURL, Log: log, MetadataClient: sv.guard.Client()})
	mcpServer := mcp.New(mcp.Config{Sites: st, Scans: st, Writes: st, BaseURL: cfg.BaseURL, Log: log, Quota: sv.quota, Links: sv.chKeys, AuditLog: sv.recorder, Field: sv.fieldReads()})
	var mail func(ctx context.Context, to, subject, body string) error // nil: logged instead
	if cfg.SMTPAddr != "" {
		mail = sv.accountMail.Enqueue
	}
	sv.stopping = make(chan struct{})
	sv.startBeacon()
	var err error
	sv.handler, err = handlers.NewHandler(handlers.Deps{
		// One store, handed to every surface as the narrow interface that surface declares.
		Auth: st, Accounts: st, Sites: st, Budgets: st, Scans: st, Reports: st, API: st, Webhooks: st,
		Connections: st, Workspaces: st, Channels: st, Health: st, CI: st, Runners: st, Beacons: st, Beacon: sv.beacon, Field: sv.fieldReads(),
		SecurityLog: st, Recorder: sv.recorder, LogRetentionDays: cfg.AuditLogDays,
		RunnerLease: time.Duration(cfg.RunnerLease) * time.Second,
		Log:         log, BaseURL: cfg.BaseURL,
		OAuth: authServer, MCP: mcpServer, PlatformSecret: cfg.PlatformSecret, DemoWebhookSecret: sv.demoSecret, DemoPlatformID: demo.PlatformID,
		MaxSitesPerWorkspace: cfg.MaxSitesPerWorkspace, MaxWorkspacesPerUser: cfg.MaxWorkspaces, SiteRules: cfg.siteRules(),
		SessionIdle: time.Duration(cfg.SessionIdleMins) * time.Minute, Replayed: sv.replay.Serves,
		Platform: sv.connector, PlatformClientID: cfg.PlatformID, PlatformAuthorizeURL: cfg.PlatformAuthURL,
		ChannelKeys: sv.chKeys, Guard: sv.guard, ChannelAllowHTTP: cfg.ScanAllowPrivate, SignedInAudits: cfg.AuditBackend == "lighthouse",
		AuthKey: sv.authKey, Mail: mail,
		Quota: sv.quota, ScanWake: sv.scanWake, Stopping: sv.stopping,
		Metrics: sv.meter, MetricsToken: cfg.MetricsToken, OpsOnly: cfg.Role == "worker",
		SSO: st, SSOProvider: cfg.ssoProvider(sv.guard), SSOName: cfg.OIDCName, SSOAllowHTTP: cfg.ScanAllowPrivate, SSORecheck: time.Duration(cfg.SSORecheckMins) * time.Minute,
		SSOBreakGlass: cfg.breakGlass(),
	})
	return err
}

// serve serves until ctx ends or a listener fails, then drains: /readyz answers 503, so the
// load balancer stops sending requests; budget checks waiting for scans answer at once; the
// listener stays open while requests are in flight (at most drainFor), then closes and the
// rest finish.
func (sv *service) serve(ctx context.Context) error {
	cfg, log := sv.cfg, sv.log
	srv := &http.Server{
		Addr:              cfg.Addr,
		Handler:           sv.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // long responses (SSE, big exports) extend their own deadline
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("listening", "addr", sv.ln.Addr().String(), "base_url", cfg.BaseURL)
	if cfg.MetricsToken == "" && cfg.MetricsAddr == "" {
		log.Info("METRICS_ADDR and METRICS_TOKEN not set: /metrics is off")
	}

	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(sv.ln) }()
	if sv.mln != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", sv.meter)
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		defer msrv.Close()
		go func() { serveErr <- msrv.Serve(sv.mln) }()
		log.Info("metrics listening", "addr", sv.mln.Addr().String())
	}
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	log.Info("shutting down: draining HTTP requests", "in_flight", sv.meter.InFlight())
	close(sv.stopping)
	srv.SetKeepAlivesEnabled(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	drain(shutdownCtx, sv.meter, drainFor)
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("HTTP shutdown", "err", err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("serve", "err", err)
	}
	log.Info("HTTP server stopped")
	return nil
}

// version is this build's: the main module's version (a tag, or the pseudo-version go build
// stamps from the commit), else the commit it was built from ("-dirty" with local changes),
// else "devel". Nothing of the build's time goes in, so two builds of a tree are the same bytes.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// drainFor bounds how long a draining process keeps its listener open for requests in flight.
const drainFor = 20 * time.Second

// drain waits until no request is in flight, for at most max or until ctx ends.
func drain(ctx context.Context, m *metrics.Metrics, max time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for m.InFlight() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// noKeys opens nothing: Postgres without PLATFORM_TOKEN_KEY, where a delivery of a channel
// saved under a key fails with the words Deliverer gives.
type noKeys struct{}

func (noKeys) OpenFor(purpose, sealed, owner string) (string, error) {
	return "", errors.New("PLATFORM_TOKEN_KEY is not set")
}

// channelKeys seal alert channel URLs and secrets with PLATFORM_TOKEN_KEY, as platform tokens
// are; the in-memory store gets a random key, and Postgres without the key gets none (the
// Notifications page then says channels cannot be saved, rather than the service not starting).
func channelKeys(cfg config, st store.Store, log *slog.Logger) (*platform.Keys, error) {
	switch {
	case cfg.PlatformKey != "":
		return platform.ParseKeys(cfg.PlatformKey)
	case st.Name() == "memory":
		return platform.RandomKeys(), nil
	}
	log.Info("PLATFORM_TOKEN_KEY not set: alert channels cannot be saved")
	return nil, nil
}

// listen binds addr. A busy address is the common mistake (a second `go run .`), so its error
// says which address and how to pick another.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		free := freeAddrNear(addr)
		return nil, fmt.Errorf("listen on %s: address already in use (is SitePulse already running?); stop that process, or choose another address with -addr %s or ADDR=%s (free just now)", addr, free, free)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// freeAddrNear is an address on addr's host that was free just now: the first of the next 100
// ports that can be listened on, else one the system picks.
func freeAddrNear(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "127.0.0.1:8081"
	}
	p, _ := strconv.Atoi(port)
	for next := p + 1; p > 0 && next < p+100 && next < 65536; next++ {
		try := net.JoinHostPort(host, strconv.Itoa(next))
		if ln, err := net.Listen("tcp", try); err == nil {
			ln.Close()
			return try
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "127.0.0.1:8081"
	}
	defer ln.Close()
	return net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
}

// platformConnector connects sites from the platform when PLATFORM_CLIENT_ID is set; nil turns
// it off. Tokens are sealed with PLATFORM_TOKEN_KEY; without it the in-memory store (which
// forgets everything at exit anyway) gets a random key, and Postgres refuses to start.
func platformConnector(cfg config, st store.Store, log *slog.Logger) (*platform.Connector, error) {
	if cfg.PlatformID == "" {
		log.Info("PLATFORM_CLIENT_ID not set: connecting sites from the platform is off")
		return nil, nil
	}
	var keys *platform.Keys
	switch {
	case cfg.PlatformKey != "":
		k, err := platform.ParseKeys(cfg.PlatformKey)
		if err != nil {
			return nil, err
		}
		keys = k
	case st.Name() == "memory":
		keys = platform.RandomKeys()
		log.Info("PLATFORM_TOKEN_KEY not set: platform tokens are sealed with a random key for this process")
	default:
		return nil, errors.New("PLATFORM_CLIENT_ID is set without PLATFORM_TOKEN_KEY: platform tokens must be sealed at rest (make a key with: openssl rand -base64 32)")
	}
	return &platform.Connector{
		Store:      st,
		Client:     platform.NewClient(platform.ClientConfig{APIURL: cfg.PlatformAPIURL, ClientID: cfg.PlatformID, ClientSecret: cfg.PlatformSecret}),
		Keys:       keys,
		WebhookURL: cfg.BaseURL + "/api/webhooks/platform",
		MaxSites:   cfg.MaxSitesPerWorkspace,
		MaxPages:   cfg.MaxPagesPerScan,
		Log:        log,
		Now:        time.Now,
	}, nil
}

// newAuditor is the configured audit backend, PageSpeed Insights (rate-limited, with a daily
// counter and a circuit breaker) or a local Lighthouse, and the audit capacity the pool shares
// fairly between scans: PSI_MAX_INFLIGHT calls, adapting to PSI's 429s, or
// LIGHTHOUSE_CONCURRENCY runs.
func newAuditor(cfg config, guard netguard.Guard, meter *metrics.Metrics, log *slog.Logger) (scanner.Auditor, *psi.Capacity) {
	if cfg.AuditBackend == "lighthouse" {
		log.Info("audit backend", "backend", cfg.AuditBackend, "lighthouse_concurrency", cfg.LHConcurrency)
		return lighthouse.New(lighthouse.Config{Command: cfg.LighthouseCmd, ChromePath: cfg.ChromePath,
				ChromeFlags: cfg.ChromeFlags, Guard: guard, Log: log}),
			psi.NewCapacity(psi.CapacityConfig{MaxInFlight: cfg.LHConcurrency, Log: log})
	}
	log.Info("audit backend", "backend", cfg.AuditBackend, "psi_rate_limit_per_100s", cfg.PSIRateLimit,
		"psi_max_inflight", cfg.PSIMaxInFlight, "psi_daily_limit", cfg.PSIDailyLimit, "psi_breaker_failures", cfg.PSIBreakerFails,
		"psi_breaker_seconds", cfg.PSIBreakerSecs, "regression_confirm_runs", cfg.ConfirmRuns)
	limiter := psi.NewRateLimiter(cfg.PSIRateLimit, 100*time.Second)
	capacity := psi.NewCapacity(psi.CapacityConfig{MaxInFlight: cfg.PSIMaxInFlight, Limiter: limiter, Log: log})
	daily := psi.NewDailyCounter(cfg.PSIDailyLimit)
	breaker := psi.NewBreaker(psi.BreakerConfig{Failures: cfg.PSIBreakerFails,
		OpenFor: time.Duration(cfg.PSIBreakerSecs) * time.Second, Log: log})
	meter.PSI = func() metrics.PSIFigures {
		used, limit := daily.Used(time.Now())
		return metrics.PSIFigures{Used: used, Limit: limit, Breaker: breaker.State()}
	}
	return psi.New(psi.Config{Endpoint: cfg.PageSpeedURL, Key: cfg.PageSpeedKey,
		Limiter: limiter, Capacity: capacity, Daily: daily, Breaker: breaker, Log: log}), capacity
}

// followSiteVersions has the store hold the sites' versions between budget checks and MCP's
// latest-scan reads, told of every change by the database (store.SiteVersionFollower: Postgres's
// LISTEN on a direct connection); without it each such read asks the version.
func followSiteVersions(ctx context.Context, st store.Store, log *slog.Logger) {
	f, ok := st.(store.SiteVersionFollower)
	if !ok {
		return
	}
	if err := f.FollowSiteVersions(ctx, func(err error) { log.Warn("site version notifications", "err", err) }); err != nil {
		log.Warn("site versions: LISTEN failed; each budget check reads its site's version", "err", err)
		return
	}
	log.Info("site versions: LISTEN heard a test notification; budget checks answer from the versions held")
}

// jobWakes subscribes once to the store's job notifications (store.JobWaker: Postgres
// LISTEN/NOTIFY, the memory store's signal) and fans each out to n channels that never block
// the sender: one pending wake-up stands for many. Without notifications every channel is nil,
// and each consumer polls.
func jobWakes(ctx context.Context, st store.Store, log *slog.Logger, n int) []<-chan struct{} {
	out := make([]<-chan struct{}, n)
	w, ok := st.(store.JobWaker)
	if !ok {
		return out
	}
	in, err := w.WakeOnJobs(ctx, func(err error) { log.Warn("job notifications", "err", err) })
	if err != nil {
		log.Warn("job wake-ups: LISTEN failed; the scanner and the budget check waits poll instead", "err", err)
		return out
	}
	log.Info("job wake-ups: LISTEN heard a test notification; enqueued jobs start at once")
	fan := make([]chan struct{}, n)
	for i := range fan {
		fan[i] = make(chan struct{}, 1)
		out[i] = fan[i]
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-in:
				for _, c := range fan {
					select {
					case c <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	return out
}

// newPool is the scan worker pool with its regression digest and account e-mails. A store that can announce new
// jobs (wake, from jobWakes) wakes the dispatcher at once; it polls either way. Sitemaps
// are fetched with fetch, the guarded client.
// keyFreeScans answers whether a workspace's scans call no PSI key, so only its own daily budget
// applies to them (psi.AccountQuota): the local Lighthouse audits every site, or runners serve
// the workspace. A store that cannot say counts the scan against the key, as before.
func keyFreeScans(cfg config, st store.Store) func(ctx context.Context, workspaceID string) bool {
	return func(ctx context.Context, workspaceID string) bool {
		if cfg.AuditBackend == "lighthouse" {
			return true
		}
		serve, err := st.RunnersServe(ctx, workspaceID)
		return err == nil && serve
	}
}

func newPool(cfg config, st store.Store, auditor scanner.Auditor, capacity *psi.Capacity, quota *psi.AccountQuota, fetch *http.Client, connector *platform.Connector, digest *notify.Digest, accountMail *notify.AccountMails, chKeys *platform.Keys, wake <-chan struct{}, meter *metrics.Metrics, log *slog.Logger, cruxRefresh *crux.Refresher, field notify.FieldSource) *scanner.Pool {
	var refresher scanner.PageRefresher
	if connector != nil { // a nil *Connector in the interface would not be nil
		refresher = connector
	}
	// Every kind of job runs through the one queue; a kind is registered here with its worker.
	// A finished scan's alerts are planned by an `alerts` job and sent by a `delivery` job per
	// event and channel, through the outbound guard (fetch).
	var opener notify.Opener = noKeys{}
	if chKeys != nil { // a nil *Keys in the interface would not be nil
		opener = chKeys
	}
	alerts := &notify.Alerts{Store: st, Planner: &notify.Planner{Store: st, BaseURL: cfg.BaseURL, Now: time.Now, Field: field}}
	var mail notify.MailFunc // nil: alert e-mails and failing-channel notices are logged instead
	if cfg.SMTPAddr != "" {
		mail = digest.Send
	}
	deliverer := &notify.Deliverer{Store: metrics.CountedDeliveries{DelivererStore: st, M: meter}, Keys: opener, Client: fetch, Mail: mail, BaseURL: cfg.BaseURL, Log: log, Now: time.Now}
	var accessKeys scanner.Opener // sites' access settings are sealed as channel URLs are
	if chKeys != nil {
		accessKeys = chKeys
	}
	kinds := []scanner.KindWorker{scanner.Work(1, digest.Work), scanner.Work(1, accountMail.Work), scanner.Work(1, alerts.Work),
		scanner.Work(1, (&scanner.FollowUps{Store: st, Now: time.Now, Log: log}).Work), scanner.Work(notify.DeliveryWorkers, deliverer.Work).PerWorkspace(notify.WorkspaceDeliveries),
		scanner.Work(notify.DeliveryWorkers, deliverer.WorkAudit).PerWorkspace(notify.WorkspaceDeliveries)}
	var schedules []func(context.Context, time.Time) (int, error)
	if field != nil { // the daily field check: each site with field data's field-only regressions, scanned or not
		check := &notify.FieldCheck{Store: st, Field: field, BaseURL: cfg.BaseURL, Now: time.Now, Log: log}
		kinds = append(kinds, scanner.Work(1, check.Work))
		schedules = append(schedules, check.ScheduleOnce)
	}
	if cruxRefresh != nil { // CrUX history: a refresh per site a week (crux.Refresher)
		kinds = append(kinds, scanner.Work(1, cruxRefresh.Work))
		schedules = append(schedules, cruxRefresh.ScheduleOnce)
	}
	return scanner.NewPool(scanner.PoolConfig{
		Store: metrics.CountedScans{Store: st, M: meter}, Retention: st, SecurityLog: st, LogRetention: time.Duration(cfg.AuditLogDays) * 24 * time.Hour, Schedules: schedules, Prunes: []func(context.Context, time.Time, int) (int, error){st.PruneCrux}, Auditor: auditor, Capacity: capacity, Log: log, Workers: cfg.ScanWorkers, WorkspaceScans: cfg.WorkspaceScans,
		Wake: wake, Platform: refresher,
		Runners:       st, // a workspace with runners has its audits leased to them (docs/runners.md)
		AccessKeys:    accessKeys,
		ConfirmRuns:   cfg.ConfirmRuns,
		Lease:         time.Duration(cfg.ScanLease) * time.Second,
		Deadline:      time.Duration(cfg.ScanDeadline) * time.Second,
		ScheduleEvery: time.Duration(cfg.SchedulePoll) * time.Second,
		Discovery: discover.Discovery{MaxPages: cfg.MaxPagesPerScan, Client: fetch,
			Deadline: time.Duration(cfg.DiscoveryTimeout) * time.Second},
		Quota: quota,
		Kinds: kinds,
		Then:  notify.AfterScan,
	})
}

// cruxRefresher is the weekly CrUX history refresh (docs/field.md): every site's from the CrUX
// History API with PAGESPEED_API_KEY (the same Google key serves PSI and CrUX once the Chrome UX
// Report API is enabled on its project), the demo site's from the API's double, offline. Without
// a key and without the demo it is nil: no refresh is scheduled.
func cruxRefresher(cfg config, st store.Store, replay *demo.Replay, log *slog.Logger) *crux.Refresher {
	budget := crux.NewBudget(cfg.CruxDaily)
	limiter := psi.NewRateLimiter(crux.PerMinute, time.Minute)
	var real, offline *crux.Client
	if cfg.PageSpeedKey != "" {
		real = crux.New(crux.Config{Endpoint: cfg.CruxURL, Key: cfg.PageSpeedKey, Budget: budget, Limiter: limiter})
	}
	if replay != nil {
		double := demo.CruxDouble(time.Now())
		offline = crux.New(crux.Config{Endpoint: cruxtest.Endpoint, Key: "offline-demo", HTTP: double.Client(), Budget: crux.NewBudget(crux.DailyRequests)})
	}
	switch {
	case real == nil && offline == nil:
		log.Info("PAGESPEED_API_KEY not set: CrUX history is off")
		return nil
	case real == nil:
		log.Info("PAGESPEED_API_KEY not set: CrUX history is off but for the demo site, whose history is served offline")
	default:
		log.Info("CrUX history: weekly refreshes with PAGESPEED_API_KEY", "crux_daily_requests", cfg.CruxDaily)
	}
	return &crux.Refresher{Store: st, Now: time.Now, Log: log, ClientFor: func(site store.Site) *crux.Client {
		if replay.Serves(site) {
			return offline
		}
		return real
	}}
}

// dbMode says which connection does what, for the start-up log (issue 36).
func dbMode(cfg config) string {
	if cfg.DatabaseDirect == "" || cfg.DatabaseDirect == cfg.DatabaseURL {
		return "direct: DATABASE_URL for queries, migrations and LISTEN (behind a transaction pooler, set DATABASE_DIRECT_URL)"
	}
	return "pooled: DATABASE_URL for queries, DATABASE_DIRECT_URL for migrations and LISTEN"
}

// openStore opens Postgres when DATABASE_URL is set, else the in-memory store; either checks
// every site it writes against the configured rules.
func openStore(ctx context.Context, cfg config) (store.Store, error) {
	if cfg.DatabaseURL == "" {
		m := memory.New()
		m.Rules = cfg.siteRules()
		return m, nil
	}
	connectCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := postgres.Open(connectCtx, cfg.DatabaseURL, postgres.Pool{MaxConns: cfg.DBMaxConns, Direct: cfg.DatabaseDirect})
	if err != nil {
		return nil, err
	}
	p.Rules = cfg.siteRules()
	return p, nil
}

// parseLogLevel reads LOG_LEVEL: DEBUG, INFO, WARN or ERROR (slog's names, any case).
func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// mustLogLevel is LOG_LEVEL's level, checked by loadConfig.
func mustLogLevel(s string) slog.Level {
	l, _ := parseLogLevel(s)
	return l
}
