package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
	"sitepulse/store/postgres"
)

// fleetBefore is the schema fleet seeds at: the last one before page results were partitioned
// (migration 043), so that starting the service on it times the migration of an existing database.
const fleetBefore = 38

// fleet seeds the size SitePulse is sized for (issue 46) into a fresh database, as an older
// SitePulse left it (schema 38, page results in one table), then times the migration to month
// partitions with the service's reads probed during it: one workspace of sites sites, each of
// pages pages scanned daily on both strategies for days days (every scan's row and summary
// kept, as retention keeps them), with the page details (results and explain data, one real
// Lighthouse result per strategy through the service's own extraction) of the last detailDays
// days, the older scans' details pruned as retention leaves them. Rows are written by
// INSERT ... SELECT from generate_series and a table of the 2 x pages results, a statement a day.
// It prints each step's time, the sizes, and writes shell exports (LOAD_KEY, LOAD_SITE,
// LOAD_SCAN, LOAD_COOKIE, LOAD_WORKSPACE) to out for .ci/fleet.sh's reads.
func fleet(ctx context.Context, w io.Writer, fixtures string, sites, pages, days, detailDays int, out string) error {
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" || out == "" {
		return errors.New("fleet needs DATABASE_URL and -out")
	}
	detailDays = min(detailDays, days)
	old, err := postgres.OpenAt(ctx, dsn, fleetBefore)
	if err != nil {
		return err
	}
	defer old.Close()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	// One connection, whose triggers are off (session_replication_role): each scan inserted or
	// updated would otherwise bump its site's budget_version (migration 003), 365 times a site
	// in one statement; budget_version stays 0, which a fresh cache reads as any other number.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `SET session_replication_role = replica`); err != nil {
		return err
	}
	var existing int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sites`).Scan(&existing); err != nil {
		return err
	}
	if existing > 0 {
		return fmt.Errorf("fleet wants a fresh database; this one has %d sites", existing)
	}
	start := time.Now()
	step := func(what string) { fmt.Fprintf(w, "%-62s %8.1f s\n", what, time.Since(start).Seconds()) }
	exec := func(q string, args ...any) error {
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("%.60s: %w", strings.Join(strings.Fields(q), " "), err)
		}
		return nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	u := store.User{ID: store.NewID(), Email: "fleet@sitepulse.test", PasswordHash: "x", CreatedAt: now}
	if err := old.CreateUser(ctx, u); err != nil {
		return err
	}
	var paths []string
	for i := range pages {
		paths = append(paths, fmt.Sprintf("/page-%d", i+1))
	}
	if err := exec(`INSERT INTO sites (id, user_id, workspace_id, name, domain, pages, created_at)
		SELECT gen_random_uuid(), $1, $1, 'Fleet ' || lpad(n::text, 4, '0'), 'fleet-' || n || '.sitepulse.test', $2::text[], $3
		FROM generate_series(1, $4) n`, u.ID, "{"+strings.Join(paths, ",")+"}", now.AddDate(0, 0, -days-1), sites); err != nil {
		return err
	}
	// The results of one scan: each page's real result per strategy, with its path and URL, and
	// its twelve metric columns (migration 002) computed once here: the seed writes them as
	// values, their expressions dropped (the one way this schema differs from 38's), because a
	// generated column reads the whole result again for each of the twelve, which made seeding
	// this machine's bottleneck. The migration copies the stored values either way.
	metrics := []string{"m_performance", "m_seo", "m_accessibility", "m_best_practices", "m_lcp", "m_cls", "m_inp", "m_fcp",
		"m_ttfb", "m_tbt", "m_speed_index", "m_tti"}
	if err := exec(`CREATE TABLE fleet_results (LIKE page_results INCLUDING DEFAULTS INCLUDING GENERATED)`); err != nil {
		return err
	}
	for _, m := range metrics {
		if err := exec(`ALTER TABLE page_results ALTER COLUMN ` + m + ` DROP EXPRESSION`); err != nil {
			return err
		}
	}
	defer db.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS fleet_results`)
	for _, s := range []store.Strategy{store.StrategyMobile, store.StrategyDesktop} {
		body, err := os.ReadFile(fixtures + "/home." + string(s) + ".json")
		if err != nil {
			return err
		}
		r, err := lighthouse.ExtractPSI(body)
		if err != nil {
			return err
		}
		if err := exec(`INSERT INTO fleet_results (scan_id, page_path, strategy, page_url, result, explain)
			SELECT gen_random_uuid(), p, $2, 'https://fleet.sitepulse.test' || p,
			jsonb_set(jsonb_set($1::jsonb, '{pagePath}', to_jsonb(p)), '{pageUrl}', to_jsonb('https://fleet.sitepulse.test' || p)), $3
			FROM unnest($4::text[]) p`, string(store.EncodeResult(r)), string(s), store.EncodeExplain(r.Explain), "{"+strings.Join(paths, ",")+"}"); err != nil {
			return err
		}
	}
	// Every scan: day d of site n at now - d days + n seconds, so a day's scans are one range.
	if err := exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, pages_total, pages_done, scores,
			created_at, started_at, completed_at, details_pruned_at, bytes)
		SELECT gen_random_uuid(), s.id, 'complete', 'both', 'schedule', $2 * 2, $2 * 2,
			'{"health":80,"performance":70,"seo":90,"accessibility":80,"bestPractices":80}',
			t.at, t.at, t.at + interval '5 minutes', CASE WHEN d > $4 THEN t.at + interval '1 hour' END, 300
		FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM sites) s
		CROSS JOIN generate_series(1, $3) d
		CROSS JOIN LATERAL (SELECT $1::timestamptz - make_interval(days => d, secs => s.n) AS at) t`, now, pages, days, detailDays); err != nil {
		return err
	}
	step(fmt.Sprintf("%d sites, %d scans with their rows", sites, sites*days))
	for d := 1; d <= detailDays; d++ {
		day := now.AddDate(0, 0, -d)
		cols := strings.Join(metrics, ", r.")
		if err := exec(`INSERT INTO page_results (scan_id, page_path, strategy, page_url, result, explain, `+strings.Join(metrics, ", ")+`)
			SELECT c.id, r.page_path, r.strategy, r.page_url, r.result, r.explain, r.`+cols+`
			FROM scans c CROSS JOIN fleet_results r WHERE c.created_at > $1::timestamptz - interval '1 day' AND c.created_at <= $1`, day); err != nil {
			return err
		}
		if d == 1 || d%10 == 0 || d == detailDays {
			step(fmt.Sprintf("page details of day %d of %d", d, detailDays))
		}
	}
	// Summaries and sizes as CompleteScan writes them: every scan's the same, so one is computed.
	var probe string
	if err := db.QueryRowContext(ctx, `SELECT id FROM scans WHERE details_pruned_at IS NULL ORDER BY created_at DESC LIMIT 1`).Scan(&probe); err != nil {
		return err
	}
	if err := exec(`WITH one AS MATERIALIZED (SELECT scan_summary($1) AS summary, scan_bytes($1) AS bytes)
		UPDATE scans SET summary = one.summary, bytes = CASE WHEN details_pruned_at IS NULL THEN one.bytes ELSE 300 END FROM one`, probe); err != nil {
		return err
	}
	step("summaries and sizes written (as CompleteScan does)")
	if err := exec(`VACUUM ANALYZE`); err != nil {
		return err
	}
	step("VACUUM ANALYZE")
	var latestSite, latestScan string
	if err := db.QueryRowContext(ctx, `SELECT c.site_id, c.id FROM scans c JOIN sites s ON s.id = c.site_id
		WHERE s.name = 'Fleet 0001' ORDER BY c.created_at DESC LIMIT 1`).Scan(&latestSite, &latestScan); err != nil {
		return err
	}
	if err := fleetSize(ctx, w, db, "seeded at schema 38:"); err != nil {
		return err
	}

	// The migration, as the next release's start applies it, with the reads probed meanwhile.
	old.Close()
	probes := startProbes(ctx, dsn, u.ID, latestScan)
	migStart := time.Now()
	st, err := postgres.Open(ctx, dsn, postgres.Pool{})
	if err != nil {
		probes.stop()
		return err
	}
	defer st.Close()
	took := time.Since(migStart)
	probes.stop()
	fmt.Fprintf(w, "migration 043 (page results to month partitions): %.1f s\n", took.Seconds())
	probes.report(w)
	// The key and session the reads use, made at the current schema (its sessions and keys have
	// columns schema 38's have not).
	key, keyHash := store.NewSecret("svc_")
	if err := st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: u.ID, Name: "fleet", KeyHash: keyHash, Prefix: key[:8],
		Scope: store.ScopeRead, CreatedAt: now}); err != nil {
		return err
	}
	token, hash := store.NewSecret("")
	csrf, _ := store.NewSecret("")
	if err := st.CreateSession(ctx, store.Session{TokenHash: hash, UserID: u.ID, CSRF: csrf, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
		return err
	}
	if err := os.WriteFile(out, fmt.Appendf(nil, "LOAD_KEY=%s\nLOAD_SITE=%s\nLOAD_SCAN=%s\nLOAD_COOKIE='session=%s'\nLOAD_WORKSPACE=%s\n",
		key, latestSite, latestScan, token, u.ID), 0o600); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `ANALYZE page_results; ANALYZE page_images; ANALYZE scans`); err != nil {
		return err
	}
	step("migrated, ANALYZE")
	months, err := st.Partitions(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "partitions: %d months, %s to %s, and a default\n", len(months), months[0].Format("2006-01"), months[len(months)-1].Format("2006-01"))
	return fleetSize(ctx, w, db, "after the migration:")
}

// fleetSize prints the database's size, page_results' and the counts.
func fleetSize(ctx context.Context, w io.Writer, db *sql.DB, what string) error {
	var total, pr, rows, scans, sites int64
	if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database()),
		(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c WHERE c.relname LIKE 'page_results%' AND c.relkind = 'r'),
		(SELECT count(*) FROM page_results), (SELECT count(*) FROM scans), (SELECT count(*) FROM sites)`).Scan(&total, &pr, &rows, &scans, &sites); err != nil {
		return err
	}
	fmt.Fprintf(w, "%-30s database %s; page_results %s, %d rows (%d B a row); %d scans, %d sites\n",
		what, mb(total), mb(pr), rows, pr/max(rows, 1), scans, sites)
	return nil
}

// probes are two reads run every 50 ms during the migration or a month's drop, each on a connection of its own:
// the home page's sites list (no page detail) and one scan's page rows. Each records how many
// answered and the longest it waited.
type probes struct {
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	answers map[string]int
	longest map[string]time.Duration
}

func startProbes(ctx context.Context, dsn, workspace, scan string) *probes {
	p := &probes{done: make(chan struct{}), answers: map[string]int{}, longest: map[string]time.Duration{}}
	for name, q := range map[string]string{
		"sites list (home page)": `SELECT count(*) FROM (SELECT id FROM sites WHERE workspace_id = $1 ORDER BY name) s WHERE $2::uuid IS NOT NULL`,
		"a scan's page rows":     `SELECT count(*) FROM page_results WHERE scan_id = $2 AND $1::uuid IS NOT NULL`,
	} {
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			continue
		}
		db.SetMaxOpenConns(1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer db.Close()
			for {
				select {
				case <-p.done:
					return
				case <-time.After(50 * time.Millisecond):
				}
				t := time.Now()
				var n int
				if err := db.QueryRowContext(ctx, q, workspace, scan).Scan(&n); err != nil {
					continue // the table renamed under it: the next try reads the new one
				}
				p.mu.Lock()
				p.answers[name]++
				p.longest[name] = max(p.longest[name], time.Since(t))
				p.mu.Unlock()
			}
		}()
	}
	return p
}

func (p *probes) stop() { close(p.done); p.wg.Wait() }

func (p *probes) report(w io.Writer) {
	for _, name := range []string{"sites list (home page)", "a scan's page rows"} {
		fmt.Fprintf(w, "  during it, %-24s answered %d times, longest wait %.1f s\n", name, p.answers[name], p.longest[name].Seconds())
	}
}

// dropMonth times the pruner's month drop (PruneMonths, as the prune job runs it) on the fleet
// database: a first run at the default retention (400 days) drops only the partitions of months
// whose scans retention pruned already; then the workspace keeps retention days, and the second
// run drops every month past it. It prints pg_database_size before and after each, and how long
// the probes of the sites list and of the newest scan's page rows waited during each.
func dropMonth(ctx context.Context, w io.Writer, retention int) error {
	st, err := open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close()
	var workspace string
	if err := db.QueryRowContext(ctx, `SELECT workspace_id FROM sites LIMIT 1`).Scan(&workspace); err != nil {
		return err
	}
	// A scan whose page rows stay (the newest): the probes read them during each drop.
	var scan string
	if err := db.QueryRowContext(ctx, `SELECT id FROM scans WHERE details_pruned_at IS NULL ORDER BY created_at DESC LIMIT 1`).Scan(&scan); err != nil {
		return err
	}
	run := func(what string) error {
		if err := fleetSize(ctx, w, db, "before:"); err != nil {
			return err
		}
		probes := startProbes(ctx, os.Getenv("DATABASE_URL"), workspace, scan)
		t := time.Now()
		months, err := st.PruneMonths(ctx, time.Now())
		took := time.Since(t)
		probes.stop()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: PruneMonths dropped %v (months with scans not pruned yet) in %.3f s\n", what, months, took.Seconds())
		probes.report(w)
		return fleetSize(ctx, w, db, "after:")
	}
	if err := run("at the default retention"); err != nil {
		return err
	}
	if err := st.SetRetention(ctx, workspace, retention); err != nil {
		return err
	}
	return run(fmt.Sprintf("at %d days", retention))
}
