package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"log/slog"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/store"
)

// fixtures are the real Lighthouse runs the demo's two scans are extracted from, and which its
// later scans replay.
//
//go:embed testdata/psi/*.json testdata/psi-before/*.json
var fixtures embed.FS

var demoFixtures = demo.Fixtures{FS: fixtures, Before: "testdata/psi-before", Latest: "testdata/psi"}

// seedDemo creates (or refreshes) the demo account and prints how to use it, and returns the
// demo's webhook secret and the replay of the demo site's audits. The secret is made up for this
// process and printed in the webhook line, so the line works in any shell; with
// PLATFORM_CLIENT_SECRET configured (never printed) it signs publishes of the demo site only.
func seedDemo(ctx context.Context, st store.Store, cfg config, stdout io.Writer, log *slog.Logger) (demoSecret string, replay *demo.Replay, err error) {
	demoSecret, _ = store.NewSecret("whsec_")
	if cfg.PlatformSecret == "" {
		log.Info("PLATFORM_CLIENT_SECRET not set: the publish webhook uses the demo's secret, made up for this process")
	}
	fx := demoFixtures
	fx.MaxPages = cfg.MaxPagesPerScan
	d, err := demo.Seed(ctx, st, fx, time.Now(), store.PasswordIterations)
	if err != nil {
		return "", nil, fmt.Errorf("demo: %w", err)
	}
	// The demo site is fictional: its scans replay the recorded runs, offline.
	runs, err := demo.LatestRuns(demoFixtures)
	if err != nil {
		return "", nil, fmt.Errorf("demo replay: %w", err)
	}
	replay = demo.NewReplay(demo.ReplayConfig{Runs: runs, SiteIDs: []string{d.SiteID}, Domain: demo.Domain, Log: log})
	log.Info("demo site audits are replayed from recorded Lighthouse runs, offline", "site", d.SiteID, "runs", len(runs))
	log.Info("demo ready", "site", d.SiteID, "new_account", d.Created)
	fmt.Fprintf(stdout, "demo login: %s %s\n", d.Email, d.Password)
	fmt.Fprintf(stdout, "demo api key: %s\n", d.APIKey)
	for _, line := range demo.Curl(cfg.BaseURL, d, demoSecret) {
		fmt.Fprintln(stdout, line)
	}
	return demoSecret, replay, nil
}
