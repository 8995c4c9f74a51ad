package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lib/pq"

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
// With explain (issue 33) every result also keeps its run's explain data (page_results.explain)
// and every run its distinct screenshots (page_images), as if the pruner had never run: its
// first run releases all but the latest two scans' pictures of each page.
func year(ctx context.Context, w io.Writer, fixtures string, sites, pages, days, retention int, explain bool) error {
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
	raw, explained := map[store.Strategy][]byte{}, map[store.Strategy][]byte{}
	images := map[store.Strategy][]store.PageImage{}
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
		if explain {
			explained[s], images[s] = store.EncodeExplain(r.Explain), r.Images
		}
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
		if _, err := db.ExecContext(ctx, `INSERT INTO page_results (scan_id, page_path, strategy, page_url, result, explain, workspace_id, scanned_at)
			SELECT c.id, p.path, st.strategy, 'https://year.sitepulse.test' || p.path,
				jsonb_set(jsonb_set(st.result, '{pagePath}', to_jsonb(p.path)), '{pageUrl}', to_jsonb('https://year.sitepulse.test' || p.path)),
				st.explain, s.workspace_id, c.created_at
			FROM scans c JOIN sites s ON s.id = c.site_id
			CROSS JOIN (SELECT '/page-' || n AS path FROM generate_series(1, $2) n) p
			CROSS JOIN (VALUES ('mobile', $3::jsonb, $5::bytea), ('desktop', $4::jsonb, $6::bytea)) st(strategy, result, explain)
			WHERE c.site_id = $1`, site.ID, pages, raw[store.StrategyMobile], raw[store.StrategyDesktop],
			explained[store.StrategyMobile], explained[store.StrategyDesktop]); err != nil {
			return fmt.Errorf("page results of site %d: %w", i, err)
		}
		for strategy, ims := range images {
			var idx, width, height []int64
			var mime, timings []string
			var final []bool
			var data [][]byte
			for _, im := range ims {
				idx, width, height = append(idx, int64(im.Index)), append(width, int64(im.Width)), append(height, int64(im.Height))
				mime, timings = append(mime, im.MIME), append(timings, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(im.Timings)), ","), "[]"))
				final, data = append(final, im.Final), append(data, im.Data)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO page_images (scan_id, page_path, strategy, idx, mime, width, height, timings, final, data, workspace_id, scanned_at)
				SELECT r.scan_id, r.page_path, r.strategy, i.idx, i.mime, i.width, i.height, ('{' || i.timings || '}')::integer[], i.final, i.data,
					r.workspace_id, r.scanned_at
				FROM scans c JOIN page_results r ON r.scan_id = c.id AND r.scanned_at = c.created_at AND r.strategy = $2
				CROSS JOIN unnest($3::smallint[], $4::text[], $5::integer[], $6::integer[], $7::text[], $8::boolean[], $9::bytea[])
					AS i(idx, mime, width, height, timings, final, data)
				WHERE c.site_id = $1`, site.ID, strategy, pq.Array(idx), pq.Array(mime), pq.Array(width), pq.Array(height),
				pq.Array(timings), pq.Array(final), pq.ByteaArray(data)); err != nil {
				return fmt.Errorf("screenshots of site %d: %w", i, err)
			}
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
		var db0, pr, pi int64
		var rows, pics int64
		if err := db.QueryRowContext(ctx, `SELECT pg_database_size(current_database()), pg_total_relation_size('page_results'),
			(SELECT count(*) FROM page_results), pg_total_relation_size('page_images'), (SELECT count(*) FROM page_images)`).Scan(&db0, &pr, &rows, &pi, &pics); err != nil {
			return err
		}
		ws, err := st.WorkspaceBytes(ctx, u.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-58s database %s, page_results %s, %d page results, page_images %s, %d pictures; workspace page: %s\n",
			what, mb(db0), mb(pr), rows, mb(pi), pics, mb(ws))
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
		statements += 3
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
	if _, err := db.ExecContext(ctx, `VACUUM ANALYZE page_results, page_images`); err != nil {
		return err
	}
	if err := size("after VACUUM (space reusable, not freed):"); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM FULL page_results`); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `VACUUM FULL page_images`); err != nil {
		return err
	}
	step("VACUUM FULL page_results, page_images")
	return size("after VACUUM FULL (space returned):")
}

// mb writes bytes in MB.
func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
