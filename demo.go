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

// fixtures are the real Lighthouse runs the demo's two scans are extracted from.
//
//go:embed testdata/psi/*.json testdata/psi-before/*.json
var fixtures embed.FS

// seedDemo creates (or refreshes) the demo account and prints how to use it, and returns the
// webhook secret the process runs with. Without PLATFORM_CLIENT_SECRET it makes one up for
// this process, so the printed webhook line works; a configured secret is never printed.
func seedDemo(ctx context.Context, st store.Store, cfg config, stdout io.Writer, log *slog.Logger) (webhookSecret string, err error) {
	webhookSecret, secretShown := cfg.PlatformSecret, "$PLATFORM_CLIENT_SECRET"
	if webhookSecret == "" {
		webhookSecret, _ = store.NewSecret("whsec_")
		secretShown = webhookSecret
		log.Info("PLATFORM_CLIENT_SECRET not set: the demo uses a random one for this process")
	}
	d, err := demo.Seed(ctx, st, demo.Fixtures{FS: fixtures, Before: "testdata/psi-before", Latest: "testdata/psi"},
		time.Now(), store.PasswordIterations)
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	log.Info("demo ready", "site", d.SiteID, "new_account", d.Created)
	fmt.Fprintf(stdout, "demo login: %s %s\n", d.Email, d.Password)
	fmt.Fprintf(stdout, "demo api key: %s\n", d.APIKey)
	for _, line := range demo.Curl(cfg.BaseURL, d, secretShown) {
		fmt.Fprintln(stdout, line)
	}
	return webhookSecret, nil
}
