package postgres

import (
	"context"
	"database/sql"
	"time"

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

// prunedScansSQL marks up to $2 prunable scans that have no page row left as pruned at $1.
var prunedScansSQL = `UPDATE scans SET details_pruned_at = $1 WHERE id IN (
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
