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
//go:embed testdata/psi/*.json testdata/psi-before/*.json testdata/field/demo.json
var fixtures embed.FS

var demoFixtures = demo.Fixtures{FS: fixtures, Before: "testdata/psi-before", Latest: "testdata/psi"}

// seedDemo creates (or finds) the demo account and prints how to use it, and returns the
// demo's webhook secret and the replay of the demo site's audits. With AUTH_KEY the password, key
// and webhook secret are derived from it, so every process prints the same lines and a restart
// keeps them; without it they are random: the process that creates the account prints its login
// and key, and the webhook secret is this process's. The secret is printed in the webhook line,
// so the line works in any shell; with PLATFORM_CLIENT_SECRET configured (never printed) it
// signs publishes of the demo site only.
//
// The demo's publish is dated two days back (demoPublishedAgo), so its field story (the recorded
// field data served as the demo site's, field) has days after the publish to judge it by.
func seedDemo(ctx context.Context, st store.Store, cfg config, authKey []byte, stdout io.Writer, log *slog.Logger) (demoSecret string, replay *demo.Replay, field *demo.Field, err error) {
	creds := demo.NewCredentials(authKey)
	if !creds.Derived {
		log.Info("AUTH_KEY not set: the demo's webhook secret is made up for this process, and its password and key are printed only by the process that creates the account")
	}
	fx := demoFixtures
	fx.MaxPages, fx.PublishedAgo = cfg.MaxPagesPerScan, demoPublishedAgo
	now := time.Now()
	d, err := demo.SeedWith(ctx, st, fx, now, store.PasswordIterations, creds)
	if err != nil {
		return "", nil, nil, fmt.Errorf("demo: %w", err)
	}
	rec, err := demo.LoadField(fixtures)
	if err != nil {
		return "", nil, nil, fmt.Errorf("demo field: %w", err)
	}
	published := d.PublishedAt
	if published.IsZero() { // the account was made before: its publish, as this process would have dated it
		published = now.Add(-demoPublishedAgo)
	}
	beacon, _ := st.(store.BeaconReads) // nil while the store keeps no beacon figures
	field = demo.NewField(rec, d.SiteID, published, st, st, beacon)
	// The demo site is fictional: its scans replay the recorded runs, offline, alternately
	// the site before and after the bad publish.
	runs, err := demo.LatestRuns(demoFixtures)
	if err != nil {
		return "", nil, nil, fmt.Errorf("demo replay: %w", err)
	}
	before, err := demo.BeforeRuns(demoFixtures)
	if err != nil {
		return "", nil, nil, fmt.Errorf("demo replay: %w", err)
	}
	replay = demo.NewReplay(demo.ReplayConfig{Runs: runs, Before: before, Store: st, SiteIDs: []string{d.SiteID}, Domain: demo.Domain, Log: log})
	log.Info("demo site audits are replayed from recorded Lighthouse runs, offline", "site", d.SiteID, "runs", len(runs))
	log.Info("demo ready", "site", d.SiteID, "new_account", d.Created)
	if d.Password == "" {
		fmt.Fprintf(stdout, "demo login: %s (the password was printed by the process that created the account; set AUTH_KEY to print it on every start)\n", d.Email)
	} else {
		fmt.Fprintf(stdout, "demo login: %s %s\n", d.Email, d.Password)
	}
	if d.APIKey == "" {
		fmt.Fprintln(stdout, "demo api key: (printed by the process that created it; set AUTH_KEY to print it on every start)")
	} else {
		fmt.Fprintf(stdout, "demo api key: %s\n", d.APIKey)
	}
	for _, line := range demo.Curl(cfg.BaseURL, d, creds.WebhookSecret) {
		fmt.Fprintln(stdout, line)
	}
	return creds.WebhookSecret, replay, field, nil
}

// demoPublishedAgo is how long before the start the demo's publish is dated: two days and a few
// hours, so the beacon has a whole day after the publish's day and part of today.
const demoPublishedAgo = 50 * time.Hour
