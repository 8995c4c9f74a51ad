package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	_ "github.com/lib/pq"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// year seeds a year of daily scans into a fresh database and measures it before and after
// retention (issue 25): sites sites of pages pages, each scanned daily for days days on both
// strategies, every page result a copy of one real Lighthouse result per strategy
// (testdata/psi/home.{mobile,desktop}.json, through the service's own extraction) with its page's
// path and URL set, inserted with generate_series in SQL. The scans then get their summaries and
// sizes as CompleteScan writes them (scan_summary, scan_bytes), and the real pruner (the store's
// PruneDetails, PruneBatch rows a statement, as the prune job runs it) applies a retention of
// retention days. It prints pg_database_size after VACUUM ANALYZE before pruning, after pruning,
// after a plain VACUUM (space reusable by Postgres, not returned to the disk), and after VACUUM
// FULL of page_results (returned); and the workspace's bytes as the workspace page shows them.
func year(ctx context.Context, w io.Writer, fixtures string, sites, pages, days, retention int) error {
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" {
		return errors.New("DATABASE_URL is not set")
	}
	st, err := open(ctx) // migrates
	if err != nil {
		return err
	}
	defer st.Close()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	var existing int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sites`).Scan(&existing); err != nil {
		return err
	}
	if existing > 0 {
		return fmt.Errorf("year wants a fresh database; this one has %d sites", existing)
	}
	raw := map[store.Strategy][]byte{}
	for _, s := range []store.Strategy{store.StrategyMobile, store.StrategyDesktop} {
		body, err := os.ReadFile(fixtures + "/home." + string(s) + ".json")
		if err != nil {
			return err
		}
		r, err := lighthouse.ExtractPSI(body)
		if err != nil {
			return err
		}
		raw[s] = store.EncodeResult(r)
	}
	now := time.Now().UTC().Truncate(time.Second)
	u := store.User{ID: store.NewID(), Email: "year@sitepulse.test", PasswordHash: "x", CreatedAt: now}
	if err := st.CreateUser(ctx, u); err != nil {
		return err
	}
	start := time.Now()
	step := func(what string) { fmt.Fprintf(w, "%-58s %8.1f s\n", what, time.Since(start).Seconds()) }
	for i := range sites {
		site := store.Site{ID: store.NewID(), UserID: u.ID, Name: fmt.Sprintf("Year %02d", i), Domain: fmt.Sprintf("year-%02d.sitepulse.test", i),
			Pages: []string{"/"}, CreatedAt: now.AddDate(0, 0, -days-1)}
		if err := st.CreateSite(ctx, site); err != nil {
			return err
		}
		// One statement per site: its days scans, then their page results.
		if _, err := db.ExecContext(ctx, `INSERT INTO scans (id, site_id, status, strategy, trigger, pages_total, pages_done,
			scores, created_at, started_at, completed_at)
			SELECT gen_random_uuid(), $1, 'complete', 'both', 'schedule', $2 * 2, $2 * 2,
				'{"health":80,"performance":70,"seo":90,"accessibility":80,"bestPractices":80}',
				$3::timestamptz - make_interval(days => d), $3::timestamptz - make_interval(days => d),
				$3::timestamptz - make_interval(days => d) + interval '5 minutes'
			FROM generate_series(1, $4) d`, site.ID, pages, now, days); err != nil {
			return fmt.Errorf("scans of site %d: %w", i, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO page_results (scan_id, page_path, strategy, page_url, result)
			SELECT c.id, p.path, st.strategy, 'https://year.sitepulse.test' || p.path,
				jsonb_set(jsonb_set(st.result, '{pagePath}', to_jsonb(p.path)), '{pageUrl}', to_jsonb('https://year.sitepulse.test' || p.path))
			FROM scans c
			CROSS JOIN (SELECT '/page-' || n AS path FROM generate_series(1, $2) n) p
			CROSS JOIN (VALUES ('mobile', $3::jsonb), ('desktop', $4::jsonb)) st(strategy, result)
			WHERE c.site_id = $1`, site.ID, pages, raw[store.StrategyMobile], raw[store.StrategyDesktop]); err != nil {
			return fmt.Errorf("page results of site %d: %w", i, err)
		}
		if i == 0 || (i+1)%10 == 0 {
			step(fmt.Sprintf("site %d of %d seeded", i+1, sites))
		}
	}
	if _, err := db.ExecContext(ctx, `UPDATE scans SET summary = scan_summary(id), bytes = scan_bytes(id)`); err != nil {
		return err
	}
	step("summaries and sizes written (as CompleteScan does)")
	size := func(what string) error {
		var db0, pr int64
		var rows int64
		if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database()), pg_total_relation_size('page_results'),
			(SELECT count(*) FROM page_results)`).Scan(&db0, &pr, &rows); err != nil {
			return err
		}
		ws, err := st.WorkspaceBytes(ctx, u.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-58s database %s, page_results %s, %d page results; workspace page: %s\n", what, mb(db0), mb(pr), rows, mb(ws))
		return nil
	}
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return err
	}
	step("VACUUM ANALYZE")
	if err := size("before retention:"); err != nil {
		return err
	}
	if err := st.SetRetention(ctx, u.ID, retention); err != nil {
		return err
	}
	pruneStart, statements, total := time.Now(), 0, 0
	for {
		n, err := st.PruneDetails(ctx, now, store.PruneBatch)
		if err != nil {
			return err
		}
		statements += 2
		total += n
		if n == 0 {
			break
		}
	}
	fmt.Fprintf(w, "pruned %d rows (page results and scans marked) in %d statements, %.1f s, %.1f ms a statement\n",
		total, statements, time.Since(pruneStart).Seconds(), float64(time.Since(pruneStart).Milliseconds())/float64(statements))
	if err := size(fmt.Sprintf("after pruning to %d days (no vacuum):", retention)); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE page_results`); err != nil {
		return err
	}
	if err := size("after VACUUM page_results (space reusable, not freed):"); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM FULL page_results`); err != nil {
		return err
	}
	step("VACUUM FULL page_results")
	return size("after VACUUM FULL page_results (space returned):")
}

// mb writes bytes in MB.
func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
