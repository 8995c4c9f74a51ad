package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

// prunableSQL is the condition on scan c (joined to its site s and workspace w) that its page
// details may go: finished more than the workspace's retention before $1 (retention 0 keeps
// them forever), not yet pruned, and not one of the latest two completed scans of its site.
const prunableSQL = `c.details_pruned_at IS NULL AND c.status IN ('complete', 'failed')
	AND w.retention_days > 0 AND c.completed_at < $1::timestamptz - make_interval(days => w.retention_days)
	AND c.id NOT IN (SELECT c2.id FROM scans c2 WHERE c2.site_id = c.site_id AND c2.status = 'complete'
		ORDER BY c2.completed_at DESC, c2.id DESC LIMIT 2)`

// pruneRowsSQL deletes up to $2 page rows of prunable scans and takes their bytes off their
// scans, in one statement; it answers a row per scan touched with how many rows went. A row
// whose pictures are not released yet (pruneImagesSQL, which counts their bytes) waits for them.
var pruneRowsSQL = `WITH victims AS (
	SELECT r.scan_id, r.page_path, r.strategy FROM scans c
	JOIN sites s ON s.id = c.site_id JOIN workspaces w ON w.id = s.workspace_id
	JOIN page_results r ON r.scan_id = c.id
	WHERE ` + prunableSQL + ` AND NOT EXISTS (SELECT 1 FROM page_images i
		WHERE i.scan_id = r.scan_id AND i.page_path = r.page_path AND i.strategy = r.strategy) LIMIT $2
), gone AS (
	DELETE FROM page_results r USING victims v
	WHERE r.scan_id = v.scan_id AND r.page_path = v.page_path AND r.strategy = v.strategy
	RETURNING r.scan_id, page_row_bytes(r) AS bytes
)
UPDATE scans c SET bytes = greatest(c.bytes - g.bytes, 0)
FROM (SELECT scan_id, sum(bytes)::bigint AS bytes, count(*) AS n FROM gone GROUP BY scan_id) g
WHERE c.id = g.scan_id RETURNING g.n`

// pruneImagesSQL deletes up to $2 pictures the store no longer keeps and takes their bytes off
// their scans, in one statement: every picture of a prunable scan (retention), and the unpinned
// pictures of a finished scan that is not one of the latest two completed scans with a result
// of the picture's page (a failed scan's always). Pinned pictures (both sides of a regression)
// stay until retention prunes their scan. It answers a row per scan touched with how many went.
var pruneImagesSQL = `WITH victims AS (
	SELECT i.scan_id, i.page_path, i.strategy, i.idx FROM page_images i
	JOIN scans c ON c.id = i.scan_id JOIN sites s ON s.id = c.site_id JOIN workspaces w ON w.id = s.workspace_id
	WHERE c.status IN ('complete', 'failed') AND c.completed_at IS NOT NULL AND ((` + prunableSQL + `)
		OR NOT i.pinned AND (c.status = 'failed' OR (SELECT count(*) FROM scans c2 JOIN page_results r2 ON r2.scan_id = c2.id
			AND r2.page_path = i.page_path AND r2.strategy = i.strategy AND r2.result IS NOT NULL
			WHERE c2.site_id = c.site_id AND c2.status = 'complete'
				AND (c2.completed_at > c.completed_at OR c2.completed_at = c.completed_at AND c2.id > c.id)) >= 2))
	LIMIT $2
), gone AS (
	DELETE FROM page_images i USING victims v
	WHERE i.scan_id = v.scan_id AND i.page_path = v.page_path AND i.strategy = v.strategy AND i.idx = v.idx
	RETURNING i.scan_id, page_image_bytes(i) AS bytes
)
UPDATE scans c SET bytes = greatest(c.bytes - g.bytes, 0)
FROM (SELECT scan_id, sum(bytes)::bigint AS bytes, count(*) AS n FROM gone GROUP BY scan_id) g
WHERE c.id = g.scan_id RETURNING g.n`

// prunedScansSQL marks up to $2 prunable scans that have no page row left as pruned at $1, with
// the size of a scan without any (the rows of a dropped month went without taking theirs off).
var prunedScansSQL = `UPDATE scans SET details_pruned_at = $1, bytes = least(bytes, ` + fmt.Sprint(store.PrunedScanBytes) + `) WHERE id IN (
	SELECT c.id FROM scans c JOIN sites s ON s.id = c.site_id JOIN workspaces w ON w.id = s.workspace_id
	WHERE ` + prunableSQL + ` AND NOT EXISTS (SELECT 1 FROM page_results r WHERE r.scan_id = c.id) LIMIT $2)`

// PruneDetails deletes in three statements of at most limit rows each, none in a transaction
// with anything else: the pictures released (pruneImagesSQL), the page rows (row locks on old
// scans' rows only, which no scan writes), then the marks of the scans left without any.
func (p *Store) PruneDetails(ctx context.Context, now time.Time, limit int) (int, error) {
	total := 0
	for _, stmt := range []string{pruneImagesSQL, pruneRowsSQL} {
		counts, err := queryAll(ctx, p.db, "prune details", func(row rowScanner) (int, error) {
			var n int
			return n, row.Scan(&n)
		}, stmt, store.Now(now), limit)
		if err != nil {
			return total, err
		}
		for _, n := range counts {
			total += n
		}
	}
	res, err := p.db.ExecContext(ctx, prunedScansSQL, store.Now(now), limit)
	if err != nil {
		return total, pgErr("prune details", err)
	}
	n, _ := res.RowsAffected()
	return total + int(n), nil
}

func (p *Store) EnqueuePrune(ctx context.Context, now time.Time, every time.Duration) (bool, error) {
	enqueued := false
	err := p.tx(ctx, func(tx *sql.Tx) error {
		// The unique index jobs_one_prune makes a second one conflict, whoever inserts it.
		res, err := tx.ExecContext(ctx, `INSERT INTO jobs (kind, args, state, max_attempts, run_at, created_at)
			SELECT $1, '{}', 'available', $2, $3, $3
			WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE kind = $1 AND state = 'completed' AND finalized_at > $4)
			ON CONFLICT (kind) WHERE kind = 'prune' AND state IN ('available', 'running') DO NOTHING`,
			store.KindPrune, store.MaxAttemptsOf(store.PruneJob{}), store.Now(now), store.Now(now.Add(-every)))
		if err != nil {
			return pgErr("enqueue prune", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			enqueued = true
			_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, store.KindPrune)
			return pgErr("notify", err)
		}
		return nil
	})
	return enqueued, err
}

func (p *Store) SetRetention(ctx context.Context, workspaceID string, days int) error {
	if !uuidOK(workspaceID) {
		return store.NotFound("workspace")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE workspaces SET retention_days = $2 WHERE id = $1`, workspaceID, days)
	return pgErr("set retention", affected(res, err, store.NotFound("workspace")))
}

func (p *Store) WorkspaceBytes(ctx context.Context, workspaceID string) (int64, error) {
	if !uuidOK(workspaceID) {
		return 0, store.NotFound("workspace")
	}
	var n int64
	err := p.db.QueryRowContext(ctx, `SELECT coalesce(sum(c.bytes), 0)::bigint FROM scans c
		JOIN sites s ON s.id = c.site_id WHERE s.workspace_id = $1`, workspaceID).Scan(&n)
	return n, pgErr("workspace bytes", err)
}

// monthKeptSQL counts the scans created in [$2, $3) not pruned yet, and those of them a month drop must not
// take: not prunable at $1 (prunableSQL, with the latest two completed scans of each site found
// once, an index-only probe a site, instead of once a scan). It reads the month's scans not pruned
// yet only (scans_unpruned_created, migration 056), and finds the latest two only when one of
// them is complete or failed, past its retention.
const monthKeptSQL = `WITH latest AS MATERIALIZED (SELECT l.id FROM sites s2 CROSS JOIN LATERAL (SELECT c2.id FROM scans c2
	WHERE c2.site_id = s2.id AND c2.status = 'complete' ORDER BY c2.completed_at DESC, c2.id DESC LIMIT 2) l)
SELECT count(*), count(*) FILTER (WHERE NOT coalesce(c.status IN ('complete', 'failed')
	AND w.retention_days > 0 AND c.completed_at < $1::timestamptz - make_interval(days => w.retention_days)
	AND c.id NOT IN (SELECT id FROM latest), false))
FROM scans c LEFT JOIN sites s ON s.id = c.site_id LEFT JOIN workspaces w ON w.id = s.workspace_id
WHERE c.created_at >= $2 AND c.created_at < $3 AND c.details_pruned_at IS NULL`

// partitionLockTimeout bounds how long the pruner's DDL waits for a table lock: a month not
// made or dropped now is at the next run, and no request queues behind the DDL for longer.
const partitionLockTimeout = "2s"

// monthStart is the first instant of t's calendar month in UTC.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Partitions lists the month partitions of page_results (migration 043), oldest first.
func (p *Store) Partitions(ctx context.Context) ([]time.Time, error) {
	names, err := queryAll(ctx, p.db, "partitions", func(r rowScanner) (n string, err error) { return n, r.Scan(&n) },
		`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'page_results'::regclass AND c.relname ~ '^page_results_p[0-9]{6}$' ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	months := make([]time.Time, 0, len(names))
	for _, n := range names {
		m, err := time.Parse("200601", strings.TrimPrefix(n, "page_results_p"))
		if err != nil {
			return nil, fmt.Errorf("partition %s: %w", n, err)
		}
		months = append(months, m)
	}
	return months, nil
}

func (p *Store) PruneMonths(ctx context.Context, now time.Time) ([]string, error) {
	if err := p.dropDetached(ctx); err != nil { // a drop that stopped between its two transactions
		return nil, err
	}
	have, err := p.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	made := map[time.Time]bool{}
	for _, m := range have {
		made[m] = true
	}
	for i := 0; i <= store.MonthsAhead; i++ {
		if m := monthStart(now).AddDate(0, i, 0); !made[m] {
			if err := p.makeMonth(ctx, m); err != nil {
				return nil, err
			}
		}
	}
	var dropped []string
	for _, m := range have {
		if m.AddDate(0, 1, 0).After(now) {
			break
		}
		held, err := p.dropMonth(ctx, now, m)
		if err != nil {
			return dropped, err
		}
		if held {
			dropped = append(dropped, m.Format("2006-01"))
		}
	}
	return dropped, nil
}

// makeMonth makes month m's partitions of page_results and page_images, the pictures' referencing
// the rows'. When the default
// partitions hold rows of m already (a clock far off), they stay there and are pruned row by row.
func (p *Store) makeMonth(ctx context.Context, m time.Time) error {
	err := p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '`+partitionLockTimeout+`'`); err != nil {
			return err
		}
		for _, table := range []string{"page_results", "page_images"} {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s_p%s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
				table, m.Format("200601"), table, m.Format(time.RFC3339), m.AddDate(0, 1, 0).Format(time.RFC3339))); err != nil {
				return err
			}
		}
		// The month's pictures reference the month's rows (migration 056: so that dropping the
		// month checks nothing), once.
		suffix := "_p" + m.Format("200601")
		_, err := tx.ExecContext(ctx, fmt.Sprintf(`DO $$ BEGIN
			IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'page_images%[1]s'::regclass AND conname = 'page_images%[1]s_row') THEN
				ALTER TABLE page_images%[1]s ADD CONSTRAINT page_images%[1]s_row FOREIGN KEY (scan_id, page_path, strategy, scanned_at)
					REFERENCES page_results%[1]s ON DELETE CASCADE;
			END IF; END $$`, suffix))
		return err
	})
	var pe *pq.Error
	if errors.As(err, &pe) && (pe.Code == "23514" || pe.Code == "55P03") {
		return nil // rows of m in the default partition, or a lock not granted: not now
	}
	return pgErr("make partition", err)
}

// dropMonth detaches month m's partitions when none of its scans is kept, in one transaction
// that holds the parents' locks only for the DDL, then drops them in another; it answers whether
// it dropped a month that held scans not pruned yet (as the memory store counts). Dropping a
// table unlinks its files as its transaction commits, before its locks go: 0.67 s for a month of
// 1.4 GB here, so the drop waits until the partitions are tables of their own, which no request
// reads. Its scans are marked pruned by PruneDetails (prunedScansSQL, a batch a statement),
// which the prune job runs next: marking a month's scans here (60,000 rows at 2,000 sites) took
// 30 s, under the locks.
func (p *Store) dropMonth(ctx context.Context, now, m time.Time) (bool, error) {
	held := false
	err := p.tx(ctx, func(tx *sql.Tx) error {
		// JIT compiling the month's check cost more than running it (1.3 s of 2.5 s).
		if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '`+partitionLockTimeout+`'; SET LOCAL jit = off`); err != nil {
			return err
		}
		var scans, kept int
		if err := tx.QueryRowContext(ctx, monthKeptSQL, store.Now(now), m, m.AddDate(0, 1, 0)).Scan(&scans, &kept); err != nil {
			return err
		}
		if kept > 0 {
			return errKept
		}
		held = scans > 0
		// The pictures first: they reference the rows. Each month's pictures reference that
		// month's rows only (migration 056), so neither DETACH checks anything.
		for _, table := range []string{"page_images", "page_results"} {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+table+` DETACH PARTITION `+table+"_p"+m.Format("200601")); err != nil {
				return err
			}
		}
		return nil
	})
	var pe *pq.Error
	if errors.Is(err, errKept) || errors.As(err, &pe) && pe.Code == "55P03" {
		return false, nil
	}
	if err != nil {
		return false, pgErr("drop partition", err)
	}
	return held, p.dropDetached(ctx)
}

// dropDetached drops the month tables dropMonth detached: every page_results_pYYYYMM and
// page_images_pYYYYMM that is no longer a partition.
func (p *Store) dropDetached(ctx context.Context) error {
	names, err := queryAll(ctx, p.db, "detached months", func(r rowScanner) (n string, err error) { return n, r.Scan(&n) },
		`SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
		AND NOT c.relispartition AND c.relname ~ '^page_(results|images)_p[0-9]{6}$' ORDER BY c.relname`)
	if err != nil || len(names) == 0 {
		return err
	}
	_, err = p.db.ExecContext(ctx, `DROP TABLE `+strings.Join(names, ", "))
	return pgErr("drop detached month", err)
}

// errKept rolls back a month drop: a scan of the month is kept.
var errKept = errors.New("a scan of the month is kept")
