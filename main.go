// Command sitepulse is the SitePulse service: Lighthouse audits of every publish, served to CI
// (budget check), people (web UI, exports, reports) and AI clients (MCP behind OAuth 2.1).
package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sitepulse/handlers"
	"sitepulse/oauth"
	"sitepulse/scanner"
	"sitepulse/store"
)

// fixtures are the real Lighthouse runs the demo's two scans are extracted from.
//
//go:embed testdata/psi/*.json testdata/psi-before/*.json
var fixtures embed.FS

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sitepulse:", err)
		os.Exit(1)
	}
}

// run wires the service and serves until ctx ends, then shuts down in order: HTTP server
// (in-flight requests finish), scanner, store.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: logLevel(getenv("LOG_LEVEL"))}))

	st, storeName, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Warn("close store", "err", err)
		}
		log.Info("store closed")
	}()
	log.Info("store ready", "store", storeName)

	if storeName == "memory" || cfg.Demo {
		if err := seedDemo(ctx, st, &cfg, stdout, log); err != nil {
			return err
		}
	}

	pool := startScanner(ctx, cfg, st, storeName, log)
	// Deferred after the store's Close, so it runs before it: HTTP server, scanner, store.
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := pool.Stop(stopCtx); err != nil {
			log.Warn("scanner stop", "err", err)
		}
		log.Info("scanner stopped")
	}()

	// The authorization server issues the access tokens the MCP endpoint accepts.
	authServer := oauth.New(oauth.Config{Store: st, BaseURL: cfg.BaseURL, Log: log})
	handler, err := handlers.NewHandler(handlers.Deps{
		Store: st, StoreName: storeName, Log: log, BaseURL: cfg.BaseURL,
		OAuth: authServer, AccessTokens: authServer, PlatformSecret: cfg.PlatformSecret,
	})
	if err != nil {
		return err
	}

	srv := &http.Server{
		Addr:              cfg.Addr,
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // long responses (SSE, big exports) extend their own deadline
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "base_url", cfg.BaseURL)

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	log.Info("shutting down: draining HTTP requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("HTTP shutdown", "err", err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("serve", "err", err)
	}
	log.Info("HTTP server stopped")
	return nil
}

// seedDemo creates (or refreshes) the demo account and prints how to use it (DESIGN §7). Without
// PLATFORM_CLIENT_SECRET it makes one up for this process, so the printed webhook works; a
// configured secret is never printed.
func seedDemo(ctx context.Context, st store.Store, cfg *config, stdout io.Writer, log *slog.Logger) error {
	secretShown := "$PLATFORM_CLIENT_SECRET"
	if cfg.PlatformSecret == "" {
		s, _ := store.NewSecret("whsec_")
		cfg.PlatformSecret, secretShown = s, s
		log.Info("PLATFORM_CLIENT_SECRET not set: the demo uses a random one for this process")
	}
	d, err := scanner.SeedDemo(ctx, st, scanner.DemoFixtures{FS: fixtures, Before: "testdata/psi-before", Latest: "testdata/psi"},
		time.Now(), store.PasswordIterations)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	log.Info("demo ready", "site", d.SiteID, "new_account", d.Created)
	fmt.Fprintf(stdout, "demo login: %s %s\n", d.Email, d.Password)
	fmt.Fprintf(stdout, "demo api key: %s\n", d.APIKey)
	for _, line := range scanner.DemoCurl(cfg.BaseURL, d, secretShown) {
		fmt.Fprintln(stdout, line)
	}
	return nil
}

// startScanner starts the worker pool on the configured audit backend. On Postgres the
// dispatcher also wakes on LISTEN/NOTIFY; it polls either way.
func startScanner(ctx context.Context, cfg config, st store.Store, storeName string, log *slog.Logger) *scanner.Pool {
	guard := scanner.Guard{AllowPrivate: cfg.ScanAllowPrivate}
	if guard.AllowPrivate {
		log.Warn("SCAN_ALLOW_PRIVATE=true: scans may fetch loopback, private and link-local addresses; do not run a multi-tenant service this way")
	}
	var auditor scanner.Auditor
	if cfg.AuditBackend == "lighthouse" {
		auditor = scanner.NewLighthouse(scanner.LighthouseConfig{Command: cfg.LighthouseCmd, ChromePath: cfg.ChromePath,
			ChromeFlags: cfg.ChromeFlags, Guard: guard, Log: log})
	} else {
		auditor = scanner.NewPSI(scanner.PSIConfig{Endpoint: cfg.PageSpeedURL, Key: cfg.PageSpeedKey,
			Limiter: scanner.NewRateLimiter(cfg.PSIRateLimit, 100*time.Second),
			Daily:   scanner.NewDailyCounter(cfg.PSIDailyLimit),
			Breaker: scanner.NewBreaker(scanner.BreakerConfig{Failures: cfg.PSIBreakerFails,
				OpenFor: time.Duration(cfg.PSIBreakerSecs) * time.Second, Log: log}),
			Log: log})
	}
	var wake <-chan struct{}
	if storeName == "postgres" {
		w, err := store.ListenJobs(ctx, cfg.DatabaseURL, func(err error) { log.Warn("job notifications", "err", err) })
		if err != nil {
			log.Warn("LISTEN for jobs failed; the scanner polls instead", "err", err)
		} else {
			wake = w
		}
	}
	pool := scanner.NewPool(scanner.PoolConfig{
		Store: st, Auditor: auditor, Log: log, Workers: cfg.ScanWorkers, Wake: wake,
		Lease:     time.Duration(cfg.ScanLease) * time.Second,
		Discovery: scanner.Discovery{MaxPages: cfg.MaxPagesPerScan, Client: guard.Client()},
		Digest: &scanner.Digest{Store: st, SMTPAddr: cfg.SMTPAddr, From: cfg.SMTPFrom, Username: cfg.SMTPUsername,
			Password: cfg.SMTPPassword, BaseURL: cfg.BaseURL, Log: log},
	})
	pool.Start()
	log.Info("audit backend", "backend", cfg.AuditBackend, "psi_rate_limit_per_100s", cfg.PSIRateLimit,
		"psi_daily_limit", cfg.PSIDailyLimit, "psi_breaker_failures", cfg.PSIBreakerFails, "psi_breaker_seconds", cfg.PSIBreakerSecs)
	return pool
}

// openStore opens Postgres when DATABASE_URL is set, else the in-memory store.
func openStore(ctx context.Context, cfg config) (store.Store, string, error) {
	if cfg.DatabaseURL == "" {
		return store.NewMemory(), "memory", nil
	}
	connectCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := store.OpenPostgres(connectCtx, cfg.DatabaseURL)
	if err != nil {
		return nil, "", err
	}
	return p, "postgres", nil
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
