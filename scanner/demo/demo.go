// Package demo seeds the demo account: a fictional site with two scans extracted from the real
// Lighthouse runs in testdata, so `go run .` shows results, budgets and regressions at once.
package demo

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// Store is what seeding the demo writes and reads: the demo account and its key, the demo site
// with its budgets and rules, and its two recorded scans, run through the queue like any other.
type Store interface {
	CreateUser(ctx context.Context, u store.User) error
	UserByEmail(ctx context.Context, email string) (store.User, error)
	SetPasswordHash(ctx context.Context, userID, hash string) error
	APIKeys(ctx context.Context, userID string) ([]store.APIKey, error)
	CreateAPIKey(ctx context.Context, k store.APIKey) error
	APIKeyByHash(ctx context.Context, keyHash string, now time.Time) (store.APIKey, error)
	RevokeAPIKey(ctx context.Context, userID, keyID string, now time.Time) error
	SiteByPlatformID(ctx context.Context, platformSiteID string) (store.Site, error)
	CreateSite(ctx context.Context, s store.Site) error
	SetBudgets(ctx context.Context, userID, siteID string, budgets map[string]store.Budget) error
	AddAlertRule(ctx context.Context, userID string, r store.AlertRule) error
	RecordPublish(ctx context.Context, p store.Publish) error
	MarkPublished(ctx context.Context, siteID string, at time.Time) error
	LatestCompletedScan(ctx context.Context, userID, siteID string) (store.Scan, error)
	EnqueueScan(ctx context.Context, s store.Scan, kind string, runAt time.Time) error
	ClaimJob(ctx context.Context, kind, workerID string, now time.Time, perWorkspace int) (store.Job, error)
	StartScan(ctx context.Context, l store.Lease, pagesTotal int, now time.Time) error
	SavePageResult(ctx context.Context, l store.Lease, r store.PageResult) error
	CompleteScan(ctx context.Context, l store.Lease, scores store.ScanScores, now time.Time, then ...store.JobArgs) error
}

// The demo account and its fictional site: a new user sees real results before connecting anything.
const (
	Email      = "demo@example.com"
	SiteName   = "Demo Site"
	Domain     = "demo.sitepulse.test"
	PlatformID = "demo-site"
	// DemoPublisher published the demo site before its latest scan.
	DemoPublisher = "Ana"
	apiKeyName    = "demo" // the key Seed hands out; a key named otherwise is the user's own
)

// Seeded is what Seed made: the credentials to print and the site to point curl at.
type Seeded struct {
	Email string
	// Password and APIKey are the demo's credentials; empty when they are random and another
	// process (or an earlier start) made them: they are stored hashed and cannot be printed again.
	Password, APIKey string
	SiteID           string
	LatestScanID     string
	Created          bool // false when the account existed and was reused
	// PublishedAt is when the demo's publish was; zero when the site existed (Created false or
	// another process made it).
	PublishedAt time.Time
}

// Credentials are the demo's password, API key and publish webhook secret.
type Credentials struct {
	Password, APIKey, WebhookSecret string
	// Derived is true when they come from AUTH_KEY: every process with the key has the same ones.
	Derived bool
}

// NewCredentials derives the demo's credentials from authKey (AUTH_KEY, the same on every
// replica), so every process prints the same login, key and webhook line and a restart keeps
// them; without a key they are random, made up for this process.
func NewCredentials(authKey []byte) Credentials {
	if len(authKey) == 0 {
		pw, _ := store.NewSecret("")
		key, _ := store.NewSecret("svc_")
		hook, _ := store.NewSecret("whsec_")
		return Credentials{Password: pw[:20], APIKey: key, WebhookSecret: hook}
	}
	// Derived as handlers' deriveKey derives its keys ("sitepulse " + purpose), with purposes
	// of their own: a demo credential reveals nothing of the device-cookie or sign-up-link keys.
	derive := func(prefix, purpose string) string {
		m := hmac.New(sha256.New, authKey)
		m.Write([]byte("sitepulse demo " + purpose))
		return prefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	return Credentials{Password: derive("", "password")[:20], APIKey: derive("svc_", "api key"),
		WebhookSecret: derive("whsec_", "webhook secret"), Derived: true}
}

// Fixtures names the two fixture sets of the demo's scans inside the embedded testdata:
// the site before a bad publish, and after it.
type Fixtures struct {
	FS             fs.FS
	Before, Latest string // directories of PSI responses, e.g. "testdata/psi-before", "testdata/psi"
	// MaxPages is MAX_PAGES_PER_SCAN: the demo site saves at most this many of its pages, as
	// any site may; 0 saves them all.
	MaxPages int
	// PublishedAgo is how long before the seeding the demo's publish was; 0 means an hour. The
	// service's demo dates it two days back, so the field's days after it exist (field.go).
	PublishedAgo time.Duration
}

// Seed seeds the demo with random credentials (SeedWith).
func Seed(ctx context.Context, st Store, fx Fixtures, now time.Time, iterations int) (Seeded, error) {
	return SeedWith(ctx, st, fx, now, iterations, NewCredentials(nil))
}

// SeedWith creates the demo account, an API key and the demo site with two completed scans
// extracted from real Lighthouse runs: the site before a publish that added a chat widget and a
// slow hero image, then after it, so the latest scan has regressions. It is safe to run on many
// processes at once and again on every start: the first creates, the others find. Found, the
// account keeps its password and key; derived credentials (AUTH_KEY) are made to work, and
// demo keys of other credentials are revoked, so restarts do not pile up live keys.
func SeedWith(ctx context.Context, st Store, fx Fixtures, now time.Time, iterations int, c Credentials) (Seeded, error) {
	d := Seeded{Email: Email}
	hash, err := store.HashPassword(c.Password, iterations)
	if err != nil {
		return d, err
	}
	u, err := st.UserByEmail(ctx, Email)
	if errors.Is(err, store.ErrNotFound) {
		u = store.User{ID: store.NewID(), Email: Email, PasswordHash: hash, NotifyRegressions: true, CreatedAt: now}
		err = st.CreateUser(ctx, u)
		d.Created = err == nil
		if errors.Is(err, store.ErrConflict) { // another process created it meanwhile
			u, err = st.UserByEmail(ctx, Email)
		}
	}
	if err != nil {
		return d, fmt.Errorf("demo user: %w", err)
	}
	if d.Created || c.Derived {
		d.Password = c.Password
	}
	if !d.Created && c.Derived {
		if ok, _ := store.CheckPassword(u.PasswordHash, c.Password, iterations); !ok {
			if err := st.SetPasswordHash(ctx, u.ID, hash); err != nil {
				return d, fmt.Errorf("demo password: %w", err)
			}
		}
	}
	if d.Created || c.Derived {
		live, err := demoKey(ctx, st, u.ID, c.APIKey, now)
		if err != nil {
			return d, err
		}
		if live {
			d.APIKey = c.APIKey
		}
	}

	if site, err := st.SiteByPlatformID(ctx, PlatformID); err == nil && site.UserID == u.ID {
		d.SiteID = site.ID
		if latest, err := st.LatestCompletedScan(ctx, u.ID, site.ID); err == nil {
			d.LatestScanID = latest.ID
		}
		return d, nil
	}
	before, err := extractDir(fx.FS, fx.Before)
	if err != nil {
		return d, err
	}
	latest, err := extractDir(fx.FS, fx.Latest)
	if err != nil {
		return d, err
	}
	ago := fx.PublishedAgo
	if ago <= 0 {
		ago = time.Hour
	}
	// The publish, the scan before it a day earlier, the site a day before that.
	publishedAt := now.Add(-ago)
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: SiteName, Domain: Domain, PlatformSiteID: PlatformID,
		Founding: true, Pages: pathsOf(latest), CreatedAt: publishedAt.Add(-47 * time.Hour)}
	if fx.MaxPages > 0 && len(site.Pages) > fx.MaxPages {
		site.Pages = site.Pages[:fx.MaxPages]
	}
	if err := st.CreateSite(ctx, site); errors.Is(err, store.ErrConflict) {
		// Another process created it meanwhile, and records its scans.
		found, err := st.SiteByPlatformID(ctx, PlatformID)
		if err != nil || found.UserID != u.ID {
			return d, fmt.Errorf("demo site: platform id %s is taken: %w", PlatformID, store.ErrConflict)
		}
		d.SiteID = found.ID
		return d, nil
	} else if err != nil {
		return d, fmt.Errorf("demo site: %w", err)
	}
	d.SiteID = site.ID
	if err := st.SetBudgets(ctx, u.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 80}, "accessibility": {Threshold: 90}, "lcp": {Threshold: 2500, Strategy: store.StrategyMobile}, "cls": {Threshold: 0.1}}); err != nil {
		return d, fmt.Errorf("demo budgets: %w", err)
	}
	if err := st.AddAlertRule(ctx, u.ID, store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "tbt", Operator: store.OpMax, Threshold: 600, CreatedAt: now}); err != nil {
		return d, fmt.Errorf("demo alert rule: %w", err)
	}
	beforeID, err := recordDemoScan(ctx, st, site, before, publishedAt.Add(-23*time.Hour), now, false)
	if err != nil {
		return d, err
	}
	regressedFrom(latest, before, beforeID)
	d.PublishedAt = publishedAt
	if err := st.MarkPublished(ctx, site.ID, publishedAt); err != nil {
		return d, err
	}
	if d.LatestScanID, err = recordDemoScan(ctx, st, site, latest, publishedAt.Add(2*time.Minute), now, true); err != nil {
		return d, err
	}
	// The publish that started the latest scan, as the platform's webhook records it.
	if err := st.RecordPublish(ctx, store.Publish{ID: store.NewID(), SiteID: site.ID, PublishedBy: DemoPublisher,
		PublishedOn: publishedAt, Domains: []string{Domain}, ScanID: d.LatestScanID}); err != nil {
		return d, fmt.Errorf("demo publish: %w", err)
	}
	return d, nil
}

// demoKey makes key (its hash) a live demo key of the user, unless it is one already, and
// revokes every other key named as Seed names its keys; a key the user made stays. It answers
// false when the key cannot be live: the user revoked it (a derived key is made only once).
func demoKey(ctx context.Context, st Store, userID, key string, now time.Time) (bool, error) {
	keys, err := st.APIKeys(ctx, userID)
	if err != nil {
		return false, fmt.Errorf("demo api keys: %w", err)
	}
	live := false
	for _, k := range keys {
		switch {
		case k.KeyHash == store.HashSecret(key):
			live = true
		case k.Name == apiKeyName:
			// Another process may have revoked it first.
			if err := st.RevokeAPIKey(ctx, userID, k.ID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
				return false, fmt.Errorf("revoke the previous demo api key: %w", err)
			}
		}
	}
	if live {
		return true, nil
	}
	err = st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: userID, Name: apiKeyName, KeyHash: store.HashSecret(key),
		Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: now})
	if errors.Is(err, store.ErrConflict) { // made meanwhile by another process with the same AUTH_KEY, or revoked
		_, err := st.APIKeyByHash(ctx, store.HashSecret(key), now)
		return err == nil, nil
	}
	if err != nil {
		return false, fmt.Errorf("demo api key: %w", err)
	}
	return true, nil
}

// LatestRuns are the runs of the latest fixture set, which the demo site's later scans replay
// (Replay), alternately with BeforeRuns.
func LatestRuns(fx Fixtures) ([]store.PageResult, error) { return extractDir(fx.FS, fx.Latest) }

// BeforeRuns are the runs of the site before the bad publish (Replay).
func BeforeRuns(fx Fixtures) ([]store.PageResult, error) { return extractDir(fx.FS, fx.Before) }

// extractDir extracts every PSI response of a fixture directory, moving the page URLs from the
// local host the runs were made on to the demo domain.
func extractDir(fsys fs.FS, dir string) ([]store.PageResult, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("demo fixtures %s: none found", dir)
	}
	var out []store.PageResult
	for _, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		r, err := lighthouse.ExtractPSI(body)
		if err != nil {
			return nil, fmt.Errorf("demo fixture %s: %w", name, err)
		}
		if u, err := url.Parse(r.PageURL); err == nil {
			from := u.Scheme + "://" + u.Host
			u.Scheme, u.Host = "https", Domain
			r.PageURL = u.String()
			moveOrigin(r.Explain, from, "https://"+Domain, u.Hostname())
		}
		out = append(out, r)
	}
	return out, nil
}

// moveOrigin moves what explains a recorded run from the local host it was made on (from, an
// origin) to the demo's (to): its first party's request, script and audit item URLs and its
// entity's name (host), so the demo's waterfall and causes name demo.sitepulse.test.
func moveOrigin(e *store.Explain, from, to, host string) {
	if e == nil {
		return
	}
	move := func(s string) string {
		if rest, ok := strings.CutPrefix(s, from); ok && (rest == "" || strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, "?")) {
			return to + rest
		}
		return s
	}
	oldHost := strings.TrimPrefix(strings.TrimPrefix(from, "http://"), "https://")
	oldHost, _, _ = strings.Cut(oldHost, ":")
	for i := range e.Requests {
		e.Requests[i].URL = move(e.Requests[i].URL)
		if e.Requests[i].Entity == oldHost {
			e.Requests[i].Entity = host
		}
	}
	for i := range e.Scripts {
		e.Scripts[i].URL = move(e.Scripts[i].URL)
	}
	for i := range e.Entities {
		if e.Entities[i].Name == oldHost {
			e.Entities[i].Name = host
		}
	}
	for i := range e.Failing {
		for j := range e.Failing[i].Items {
			e.Failing[i].Items[j] = move(e.Failing[i].Items[j])
		}
	}
}

// regressedFrom marks the latest runs that regressed against the same page of the scan before
// (analysis.Suspect, as the pipeline does), so both sides' screenshots are kept.
func regressedFrom(latest, before []store.PageResult, beforeID string) {
	prev := map[store.PageKey]store.PageResult{}
	for _, r := range before {
		prev[store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}] = r
	}
	for i, r := range latest {
		if p, ok := prev[store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}]; ok && analysis.Suspect(p, r) {
			latest[i].RegressedFrom = beforeID
		}
	}
}

func pathsOf(results []store.PageResult) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range results {
		if !seen[r.PagePath] {
			seen[r.PagePath] = true
			out = append(out, r.PagePath)
		}
	}
	sort.Strings(out)
	return out
}

// recordDemoScan takes a scan through the queue's life cycle on the demo queue, which no worker
// claims: enqueue, claim, start, store each result, complete with the scan's scores. The scan
// is dated at, its job claimed now: a lease dated in the past would be rescued at once by
// another process's rescuer, started meanwhile on the same database. With alerts the completion
// enqueues the scan's alerts job, as a real scan's does, so the alerts worker keeps what it left
// (the sites list's triage: its regressions and broken budgets).
func recordDemoScan(ctx context.Context, st Store, site store.Site, results []store.PageResult, at, now time.Time, alerts bool) (string, error) {
	scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerDemo, CreatedAt: at}
	if err := st.EnqueueScan(ctx, scan, store.KindDemo, at); err != nil {
		return "", fmt.Errorf("demo scan: %w", err)
	}
	job, err := st.ClaimJob(ctx, store.KindDemo, "demo-seed", now, 0)
	if err != nil {
		return "", fmt.Errorf("demo scan: %w", err)
	}
	if job.ScanID != scan.ID {
		return "", fmt.Errorf("demo scan: claimed %s, want %s", job.ScanID, scan.ID)
	}
	lease := job.Lease()
	if err := st.StartScan(ctx, lease, len(results), at); err != nil {
		return "", err
	}
	for _, r := range results {
		if err := st.SavePageResult(ctx, lease, r); err != nil {
			return "", err
		}
	}
	var then []store.JobArgs
	if alerts {
		then = append(then, store.AlertsJob{ScanID: scan.ID})
	}
	if err := st.CompleteScan(ctx, lease, analysis.ScanScores(results), at.Add(90*time.Second), then...); err != nil {
		return "", err
	}
	return scan.ID, nil
}

// MCPVersion is the protocol version the printed MCP line speaks: the newest the server does
// (mcp.SupportedVersions[0]; a test keeps them equal). Without the header a request is served as
// 2025-03-26, which lists the interface's nine tools and answers no causes.
const MCPVersion = "2026-07-28"

// Curl returns ready-to-paste commands against a running service: the budget check, MCP
// tools/list at MCPVersion, and a signed publish webhook. The webhook line makes a fresh delivery id (`_id`,
// which with the body is what the 24-hour replay guard keys on) and signs the body with openssl
// each time it runs, so pasting it again publishes again; webhookSecret is the demo's own secret,
// printed, so the line works in any shell.
func Curl(baseURL string, d Seeded, webhookSecret string) []string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var lines []string
	if d.APIKey != "" { // an unknown key (see Seeded) makes no line
		lines = append(lines,
			fmt.Sprintf(`curl -s -X POST %s/api/external/budget-check -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"siteId":"%s"}'`, baseURL, d.APIKey, d.SiteID),
			fmt.Sprintf(`curl -s -X POST %s/api/mcp -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: %s' -H 'Mcp-Method: tools/list' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"%[3]s","io.modelcontextprotocol/clientCapabilities":{}}}}'`, baseURL, d.APIKey, MCPVersion))
	}
	return append(lines, fmt.Sprintf(`body='{"siteId":"%s","_id":"'$(openssl rand -hex 12)'"}'; curl -s -X POST %s/api/webhooks/platform -H 'Content-Type: application/json' -H "x-platform-signature: $(printf %%s "$body" | openssl dgst -sha256 -hmac %s -hex | sed 's/^.* //')" -d "$body"`,
		PlatformID, baseURL, q(webhookSecret)))
}
