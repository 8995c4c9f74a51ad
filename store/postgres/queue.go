package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

func (p *Store) EnqueueScan(ctx context.Context, s store.Scan, kind string, runAt time.Time) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO scans (id, site_id, status, strategy, trigger, created_at, pages_found)
			VALUES ($1, $2, 'queued', $3, $4, $5, $6)`, s.ID, s.SiteID, s.Strategy, s.Trigger, store.Now(s.CreatedAt), s.PagesFound)
		if err != nil {
			return pgErr("enqueue scan", err)
		}
		_, err = insertJob(ctx, tx, kind, store.ScanJob{ScanID: s.ID, Pages: s.Pages}, s.ID, runAt, s.CreatedAt)
		return err
	})
}

func (p *Store) EnqueueJob(ctx context.Context, args store.JobArgs, runAt time.Time) (store.Job, error) {
	var j store.Job
	err := p.tx(ctx, func(tx *sql.Tx) (err error) {
		j, err = insertJob(ctx, tx, args.Kind(), args, "", runAt, time.Now())
		return err
	})
	return j, err
}

// insertJob stores a job of kind with args as JSON in tx and notifies the dispatchers, who hear
// of it when tx commits. Its workspace is the one args names (store.WorkspaceOf), else its
// scan's site's.
func insertJob(ctx context.Context, tx *sql.Tx, kind string, args any, scanID string, runAt, createdAt time.Time) (store.Job, error) {
	if kind == "" {
		return store.Job{}, fmt.Errorf("job args %T: no kind", args)
	}
	// JSON goes as a string: a []byte goes in binary format (binary_parameters, Open), which
	// Postgres reads as bytea's, and jsonb's starts with a version byte.
	raw, err := json.Marshal(args)
	if err != nil {
		return store.Job{}, fmt.Errorf("job args of kind %s: %w", kind, err)
	}
	j, err := scanJob(tx.QueryRowContext(ctx, `INSERT INTO jobs (kind, args, scan_id, state, max_attempts, run_at, created_at, workspace_id)
		VALUES ($1, $2, NULLIF($3, '')::uuid, 'available', $4, $5, $6, coalesce(NULLIF($7, '')::uuid,
			(SELECT s.workspace_id FROM scans c JOIN sites s ON s.id = c.site_id WHERE c.id = NULLIF($3, '')::uuid))) RETURNING `+jobCols,
		kind, string(raw), scanID, store.MaxAttemptsOf(args), store.Now(runAt), store.Now(createdAt), store.WorkspaceOf(args)))
	if err != nil {
		return j, pgErr("enqueue job", err)
	}
	_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, kind)
	return j, pgErr("notify", err)
}

// NotifyChannel is the LISTEN/NOTIFY channel every enqueue notifies with the job's kind, so
// dispatchers wake at once.
const NotifyChannel = "sitepulse_jobs"

const jobCols = `id, kind, args, coalesce(scan_id::text, ''), coalesce(workspace_id::text, ''), state, attempt, max_attempts, snoozes, run_at, heartbeat_at, locked_by, last_error, created_at, finalized_at`

// jobColsJ is jobCols with its id qualified by the alias j, for the claim's UPDATE ... FROM.
const jobColsJ = "j." + jobCols

func scanJob(row rowScanner) (store.Job, error) {
	var j store.Job
	var hb, fin sql.NullTime
	var args []byte
	err := row.Scan(&j.ID, &j.Kind, &args, &j.ScanID, &j.WorkspaceID, &j.State, &j.Attempt, &j.MaxAttempts, &j.Snoozed, &j.RunAt, &hb,
		&j.LockedBy, &j.LastError, &j.CreatedAt, &fin)
	j.Args = json.RawMessage(args)
	j.RunAt, j.CreatedAt, j.HeartbeatAt, j.FinalizedAt = j.RunAt.UTC(), j.CreatedAt.UTC(), timePtr(hb), timePtr(fin)
	return j, err
}

// claimSQL is the one claim (FOR UPDATE SKIP LOCKED, River's JobGetAvailable): the runnable job
// of kind $1 whose owning account (migration 038's owning_account), then whose workspace, runs
// the fewest jobs of the kind anywhere, oldest first among equals, skipping ($4 > 0) the
// workspaces and the accounts running $4 of them under worker $2 already, marked running under
// worker $2 at $3. The counts are of running jobs, read by the same statement
// (jobs_running_workspace). Written twice: the memory store's ClaimJob is the same rule, kept
// equal by the contract tests testFairClaims and testFairClaimsPerAccount.
const claimSQL = `WITH running AS (
		SELECT workspace_id, owning_account(workspace_id) AS account, count(*) AS n, count(*) FILTER (WHERE locked_by = $2) AS here
		FROM jobs WHERE kind = $1 AND state = 'running' AND workspace_id IS NOT NULL
		GROUP BY workspace_id),
	accounts AS (
		SELECT account, sum(n) AS n, sum(here) AS here FROM running WHERE account IS NOT NULL GROUP BY account),
	next AS (
		SELECT j.id FROM jobs j LEFT JOIN running r ON r.workspace_id = j.workspace_id
		LEFT JOIN accounts a ON a.account = owning_account(j.workspace_id)
		WHERE j.kind = $1 AND j.state = 'available' AND j.run_at <= $3
			AND ($4::int <= 0 OR coalesce(r.here, 0) < $4::int AND coalesce(a.here, 0) < $4::int)
		ORDER BY coalesce(a.n, 0), coalesce(r.n, 0), j.run_at, j.id FOR UPDATE OF j SKIP LOCKED LIMIT 1)
	UPDATE jobs j SET state = 'running', attempt = j.attempt + 1, heartbeat_at = $3, locked_by = $2
	FROM next WHERE j.id = next.id RETURNING ` + jobColsJ

func (p *Store) ClaimJob(ctx context.Context, kind, workerID string, now time.Time, perWorkspace int) (store.Job, error) {
	j, err := scanJob(p.db.QueryRowContext(ctx, claimSQL, kind, workerID, store.Now(now), perWorkspace))
	return j, pgErr("claim job", err)
}

// leaseCond matches a job still running under the lease's attempt.
const leaseCond = `id = $1 AND attempt = $2 AND state = 'running'`

func (p *Store) Heartbeat(ctx context.Context, l store.Lease, now time.Time) error {
	res, err := p.db.ExecContext(ctx, `UPDATE jobs SET heartbeat_at = $3 WHERE `+leaseCond, l.JobID, l.Attempt, store.Now(now))
	return pgErr("heartbeat", affected(res, err, store.ErrLeaseLost))
}

func (p *Store) ScanForJob(ctx context.Context, scanID string) (store.Scan, store.Site, error) {
	if !uuidOK(scanID) {
		return store.Scan{}, store.Site{}, store.NotFound("scan")
	}
	sc, err := scanScan(p.db.QueryRowContext(ctx, `SELECT `+scanCols+` FROM scans c WHERE c.id = $1`, scanID))
	if err != nil {
		return store.Scan{}, store.Site{}, pgErr("scan", err)
	}
	site, err := scanSite(p.db.QueryRowContext(ctx, `SELECT `+siteCols+` FROM sites WHERE id = $1`, sc.SiteID))
	return sc, site, pgErr("site", err)
}

// underLease runs fn in a transaction after locking the lease's job row; ErrLeaseLost when the
// job is no longer running under that attempt.
func (p *Store) underLease(ctx context.Context, l store.Lease, fn func(tx *sql.Tx) error) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM jobs WHERE `+leaseCond+` FOR UPDATE`, l.JobID, l.Attempt).Scan(&one)
		if err == sql.ErrNoRows {
			return store.ErrLeaseLost
		}
		if err != nil {
			return pgErr("lease", err)
		}
		return fn(tx)
	})
}

func (p *Store) StartScan(ctx context.Context, l store.Lease, pagesTotal int, now time.Time) error {
	return p.underLease(ctx, l, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE scans SET status = 'running', pages_total = $2,
			started_at = coalesce(started_at, $3) WHERE id = $1`, l.ScanID, pagesTotal, store.Now(now))
		return pgErr("start scan", err)
	})
}

// SetPagesFound checks the lease in its one statement, like SetAuditsInFlight.
func (p *Store) SetPagesFound(ctx context.Context, l store.Lease, audited, found int) error {
	res, err := p.db.ExecContext(ctx, `UPDATE scans SET pages_audited = $4, pages_found = greatest(pages_found, $5)
		WHERE id = $3 AND EXISTS (SELECT 1 FROM jobs WHERE `+leaseCond+`)`, l.JobID, l.Attempt, l.ScanID, audited, found)
	if err != nil {
		return pgErr("pages found", err)
	}
	return p.leaseCheck(ctx, res, l)
}

// SetAuditsInFlight checks the lease in its one statement, like the page writes.
func (p *Store) SetAuditsInFlight(ctx context.Context, l store.Lease, n int) error {
	res, err := p.db.ExecContext(ctx, `UPDATE scans SET audits_in_flight = $4
		WHERE id = $3 AND EXISTS (SELECT 1 FROM jobs WHERE `+leaseCond+`)`, l.JobID, l.Attempt, l.ScanID, n)
	if err != nil {
		return pgErr("audits in flight", err)
	}
	return p.leaseCheck(ctx, res, l)
}

func (p *Store) DonePages(ctx context.Context, scanID string) ([]store.PageKey, error) {
	if !uuidOK(scanID) {
		return []store.PageKey{}, nil
	}
	return queryAll(ctx, p.db, "done pages", func(r rowScanner) (k store.PageKey, err error) { return k, r.Scan(&k.PagePath, &k.Strategy) },
		`SELECT page_path, strategy FROM page_results WHERE scan_id = $1 ORDER BY page_path, strategy`, scanID)
}

// The page writes check the lease inside their one statement, so a stale worker writes nothing,
// and move pages_done in the same statement.

// scanKeySQL is the workspace and partition key (the scan's created_at: migration 043) of the
// rows of scan $3.
const scanKeySQL = `SELECT s.workspace_id, c.created_at AS scanned_at FROM scans c JOIN sites s ON s.id = c.site_id WHERE c.id = $3`

// priorSQL is the row of page $4, $5 of scan $3 before the statement: a partitioned table's
// RETURNING cannot read xmax, so the upserts tell an insert from an update by it (one
// snapshot for the whole statement: the lease holder is the page's one writer).
const priorSQL = `SELECT 1 FROM page_results WHERE scan_id = $3 AND page_path = $4 AND strategy = $5`

// savePageResultSQL[n] calls save_page_result (migrations 057 and 060: the statements that store
// a result, its explain data and its pictures under the lease, each pruned to the scan's month and
// planned once per server connection)
// for n pictures, whose bytes are the parameters $16 to $15+n: a []byte parameter goes in binary
// (binary_parameters, Open), where a bytea[] went as text, each byte hex-encoded by lib/pq and
// decoded by Postgres (110 kB of pictures per result are 220 kB of hex).
var savePageResultSQL = func() (s [store.MaxPageImages + 1]string) {
	for n := range s {
		params := make([]string, n)
		for i := range params {
			params[i] = "$" + strconv.Itoa(16+i) + "::bytea"
		}
		s[n] = `SELECT save_page_result($1, $2, $3, $4, $5, $6, $7, $8, $9::smallint[], $10::text[], $11::integer[], $12::integer[],
			$13::text[], $14::boolean[], $15::uuid, ARRAY[` + strings.Join(params, ", ") + `]::bytea[])`
	}
	return s
}()

func (p *Store) SavePageResult(ctx context.Context, l store.Lease, r store.PageResult) error {
	n := min(len(r.Images), store.MaxPageImages)
	idx, width, height := make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	mime, timings := make([]string, 0, n), make([]string, 0, n)
	final, data := make([]bool, 0, n), make([]any, 0, n)
	for i, im := range r.Images {
		if i != im.Index || !store.KeepableImage(im.MIME, len(im.Data)) || i == store.MaxPageImages {
			break // pictures are kept from 0 on, in order: a run's first bad one ends them
		}
		idx, mime, width, height = append(idx, int64(i)), append(mime, im.MIME), append(width, int64(im.Width)), append(height, int64(im.Height))
		timings, final, data = append(timings, intArray(im.Timings)), append(final, im.Final), append(data, im.Data)
	}
	var pinFrom any
	if uuidOK(r.RegressedFrom) && r.RegressedFrom != l.ScanID {
		pinFrom = r.RegressedFrom
	}
	args := append([]any{l.JobID, l.Attempt, l.ScanID, r.PagePath, r.Strategy, r.PageURL, string(store.EncodeResult(r)), store.EncodeExplain(r.Explain),
		pq.Array(idx), pq.Array(mime), pq.Array(width), pq.Array(height), pq.Array(timings), pq.Array(final), pinFrom}, data...)
	var moved int64
	if err := p.db.QueryRowContext(ctx, savePageResultSQL[len(data)], args...).Scan(&moved); err != nil {
		return pgErr("save page result", err)
	}
	return p.leaseHeld(ctx, moved, l)
}

// intArray is the text of an integer[]: {375,750}.
func intArray(v []int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	b.WriteByte('}')
	return b.String()
}

func (p *Store) SavePageError(ctx context.Context, l store.Lease, e store.PageError) error {
	res, err := p.db.ExecContext(ctx, `WITH lease AS (SELECT 1 FROM jobs WHERE `+leaseCond+`),
		scanKey AS (`+scanKeySQL+`),
		prior AS (`+priorSQL+`),
		up AS (INSERT INTO page_results (scan_id, page_path, strategy, page_url, result, error, workspace_id, scanned_at)
			SELECT $3, $4, $5, $6, NULL, $7, k.workspace_id, k.scanned_at FROM lease, scanKey k
			ON CONFLICT (scan_id, page_path, strategy, scanned_at) DO UPDATE
				SET page_url = EXCLUDED.page_url, error = EXCLUDED.error WHERE page_results.result IS NULL
			RETURNING NOT EXISTS (SELECT 1 FROM prior) AS inserted)
		UPDATE scans SET pages_done = pages_done + 1 FROM up WHERE id = $3 AND up.inserted`,
		l.JobID, l.Attempt, l.ScanID, e.PagePath, e.Strategy, e.PageURL, e.Error)
	if err != nil {
		return pgErr("save page error", err)
	}
	return p.leaseCheck(ctx, res, l)
}

// leaseCheck tells a write that changed no scan row apart: a replaced row (fine) or a lost lease.
func (p *Store) leaseCheck(ctx context.Context, res sql.Result, l store.Lease) error {
	n, _ := res.RowsAffected()
	return p.leaseHeld(ctx, n, l)
}

// leaseHeld is leaseCheck for a write that says how many scan rows it changed.
func (p *Store) leaseHeld(ctx context.Context, changed int64, l store.Lease) error {
	if changed > 0 {
		return nil
	}
	var one int
	err := p.db.QueryRowContext(ctx, `SELECT 1 FROM jobs WHERE `+leaseCond, l.JobID, l.Attempt).Scan(&one)
	if err == sql.ErrNoRows {
		return store.ErrLeaseLost
	}
	return pgErr("lease", err)
}

func (p *Store) CompleteScan(ctx context.Context, l store.Lease, scores store.ScanScores, now time.Time, then ...store.JobArgs) error {
	raw, err := json.Marshal(scores)
	if err != nil {
		return err
	}
	return p.underLease(ctx, l, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'completed', finalized_at = $2 WHERE id = $1`, l.JobID, store.Now(now)); err != nil {
			return pgErr("complete job", err)
		}
		for _, args := range then {
			if _, err := insertJob(ctx, tx, args.Kind(), args, "", now, now); err != nil {
				return err
			}
		}
		// The summary and size are computed where the rows are, in this transaction: the trends
		// read them for ever after (scan_summary, migration 018).
		if _, err := tx.ExecContext(ctx, `UPDATE scans SET status = 'complete', scores = $2, completed_at = $3,
			error = '', summary = scan_summary($1), bytes = scan_bytes($1) WHERE id = $1`, l.ScanID, string(raw), store.Now(now)); err != nil {
			return pgErr("complete scan", err)
		}
		_, err := tx.ExecContext(ctx, `UPDATE sites SET health_score = $2
			WHERE id = (SELECT site_id FROM scans WHERE id = $1)`, l.ScanID, scores.Health)
		return pgErr("site health", err)
	})
}

func (p *Store) FailScan(ctx context.Context, l store.Lease, reason string, now time.Time) error {
	return p.underLease(ctx, l, func(tx *sql.Tx) error {
		return discardTx(ctx, tx, l.JobID, reason, now)
	})
}

// discardTx discards a job and, when it runs a scan, fails the scan with the same reason.
func discardTx(ctx context.Context, tx *sql.Tx, jobID int64, reason string, now time.Time) error {
	var scanID sql.NullString
	if err := tx.QueryRowContext(ctx, `UPDATE jobs SET state = 'discarded', last_error = $2, finalized_at = $3
		WHERE id = $1 RETURNING scan_id`, jobID, reason, store.Now(now)).Scan(&scanID); err != nil {
		return pgErr("discard job", err)
	}
	if !scanID.Valid {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE scans SET status = 'failed', error = $2, completed_at = $3, bytes = scan_bytes($1) WHERE id = $1`,
		scanID.String, reason, store.Now(now))
	if err != nil {
		return pgErr("fail scan", err)
	}
	_, err = insertJob(ctx, tx, store.KindAlerts, store.AlertsJob{ScanID: scanID.String}, "", now, now)
	return err
}

func (p *Store) DiscardJob(ctx context.Context, l store.Lease, reason string, now time.Time) error {
	return p.underLease(ctx, l, func(tx *sql.Tx) error {
		return discardTx(ctx, tx, l.JobID, reason, now)
	})
}

func (p *Store) CompleteJob(ctx context.Context, l store.Lease, now time.Time) error {
	res, err := p.db.ExecContext(ctx, `UPDATE jobs SET state = 'completed', finalized_at = $3 WHERE `+leaseCond,
		l.JobID, l.Attempt, store.Now(now))
	if err != nil {
		return pgErr("complete job", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	// Finished by its worker under this attempt (CompleteScan, FailScan): nothing to do.
	var one int
	err = p.db.QueryRowContext(ctx, `SELECT 1 FROM jobs WHERE id = $1 AND attempt = $2
		AND state IN ('completed', 'discarded')`, l.JobID, l.Attempt).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrLeaseLost
	}
	return pgErr("complete job", err)
}

func (p *Store) CleanJobs(ctx context.Context, finishedBefore time.Time, limit int) (int, error) {
	res, err := p.db.ExecContext(ctx, `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs
		WHERE state IN ('completed', 'discarded') AND finalized_at < $1 ORDER BY finalized_at LIMIT $2)`,
		store.Now(finishedBefore), limit)
	if err != nil {
		return 0, pgErr("clean jobs", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

func (p *Store) RetryJob(ctx context.Context, l store.Lease, runAt time.Time, reason string) error {
	res, err := p.db.ExecContext(ctx, `UPDATE jobs SET state = 'available', run_at = $3, last_error = $4,
		locked_by = '' WHERE `+leaseCond, l.JobID, l.Attempt, store.Now(runAt), reason)
	return pgErr("retry job", affected(res, err, store.ErrLeaseLost))
}

func (p *Store) SnoozeJob(ctx context.Context, l store.Lease, runAt time.Time, reason string) error {
	res, err := p.db.ExecContext(ctx, `UPDATE jobs SET state = 'available', run_at = $3, last_error = $4,
		locked_by = '', max_attempts = max_attempts + 1, snoozes = snoozes + 1 WHERE `+leaseCond, l.JobID, l.Attempt, store.Now(runAt), reason)
	return pgErr("snooze job", affected(res, err, store.ErrLeaseLost))
}

func (p *Store) RescueJobs(ctx context.Context, staleBefore, now time.Time) (int, error) {
	n := 0
	err := p.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, attempt >= max_attempts FROM jobs
			WHERE state = 'running' AND heartbeat_at < $1 FOR UPDATE SKIP LOCKED`, store.Now(staleBefore))
		if err != nil {
			return pgErr("rescue", err)
		}
		type stale struct {
			id    int64
			spent bool
		}
		var jobs []stale
		for rows.Next() {
			var s stale
			if err := rows.Scan(&s.id, &s.spent); err != nil {
				rows.Close()
				return pgErr("rescue", err)
			}
			jobs = append(jobs, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return pgErr("rescue", err)
		}
		for _, j := range jobs {
			if j.spent {
				if err := discardTx(ctx, tx, j.id, store.RescueGiveUp, now); err != nil {
					return err
				}
				continue
			}
			// run_at is kept: the job goes back to its place in the queue, ahead of later ones.
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'available', last_error = $2,
				locked_by = '' WHERE id = $1`, j.id, store.RescueReason); err != nil {
				return pgErr("rescue", err)
			}
		}
		n = len(jobs)
		return nil
	})
	return n, err
}

func (p *Store) Job(ctx context.Context, id int64) (store.Job, error) {
	j, err := scanJob(p.db.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id))
	return j, pgErr("job", err)
}

func (p *Store) OverdueScans(ctx context.Context, startedBefore time.Time) ([]store.OverdueScan, error) {
	return queryAll(ctx, p.db, "overdue scans", func(row rowScanner) (store.OverdueScan, error) {
		var o store.OverdueScan
		var scores, summary []byte
		var started, completed, pruned sql.NullTime
		err := row.Scan(&o.ID, &o.SiteID, &o.Status, &o.Strategy, &o.Trigger, &o.PagesTotal, &o.PagesDone,
			&scores, &o.Error, &o.CreatedAt, &started, &completed, &o.AuditsInFlight, &o.PagesFound, &o.PagesAudited,
			&summary, &o.Bytes, &pruned, &o.UserID, &o.LastError)
		if err != nil {
			return o, err
		}
		o.CreatedAt, o.StartedAt, o.CompletedAt = o.CreatedAt.UTC(), timePtr(started), timePtr(completed)
		return o, json.Unmarshal(scores, &o.Scores)
	}, `SELECT `+scanCols+`, s.user_id, j.last_error FROM scans c
		JOIN sites s ON s.id = c.site_id JOIN jobs j ON j.scan_id = c.id AND j.kind = $2
		WHERE c.status IN ('queued', 'running') AND coalesce(c.started_at, c.created_at) < $1
		ORDER BY coalesce(c.started_at, c.created_at), c.id`, store.Now(startedBefore), store.KindScan)
}

func (p *Store) ExpireScan(ctx context.Context, scanID, reason string, now time.Time) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		var jobID int64
		err := tx.QueryRowContext(ctx, `SELECT j.id FROM scans c JOIN jobs j ON j.scan_id = c.id
			WHERE c.id = $1 AND c.status IN ('queued', 'running') FOR UPDATE OF c, j`, scanID).Scan(&jobID)
		if errors.Is(err, sql.ErrNoRows) {
			return store.NotFound("unfinished scan")
		}
		if err != nil {
			return pgErr("expire scan", err)
		}
		return discardTx(ctx, tx, jobID, reason, now)
	})
}

// enqueueDueSQL enqueues, in one statement, the scans of at most $2 sites due at $1 (those due
// longest first, skipping sites another scheduler holds): each due site without a scan in
// flight (the partial unique index; one in flight serves as this period's scan) gets a scan,
// with id $3[i] for the i-th due site, and its job of kind $4 with $5 attempts, and every due
// site moves a period ahead (store.NextScanAt: one period after it was due, or after $1 when
// that has passed too). It answers the scans made, in due order, and notifies the dispatchers
// when it made one.
const enqueueDueSQL = `WITH due AS (
		SELECT id, scan_schedule, next_scan_at, row_number() OVER (ORDER BY next_scan_at, id) AS n FROM (
			SELECT id, scan_schedule, next_scan_at FROM sites WHERE next_scan_at <= $1 AND scan_schedule <> 'off'
			ORDER BY next_scan_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) locked),
	moved AS (
		UPDATE sites s SET next_scan_at = CASE
			WHEN p.period IS NULL THEN NULL
			WHEN d.next_scan_at + p.period > $1 THEN d.next_scan_at + p.period
			ELSE $1::timestamptz + p.period END
		FROM due d CROSS JOIN LATERAL (SELECT CASE d.scan_schedule WHEN 'daily' THEN interval '24 hours'
			WHEN 'weekly' THEN interval '168 hours' END AS period) p
		WHERE s.id = d.id RETURNING s.id),
	made AS (
		INSERT INTO scans (id, site_id, status, strategy, trigger, created_at)
		SELECT ($3::uuid[])[d.n], d.id, 'queued', 'both', 'schedule', $1 FROM due d ORDER BY d.n
		ON CONFLICT (site_id) WHERE status IN ('queued', 'running') DO NOTHING
		RETURNING id, site_id),
	jobs AS (
		INSERT INTO jobs (kind, args, scan_id, state, max_attempts, run_at, created_at, workspace_id)
		SELECT $4, jsonb_build_object('scanId', m.id), m.id, 'available', $5, $1, $1, s.workspace_id
		FROM made m JOIN sites s ON s.id = m.site_id
		RETURNING scan_id),
	notified AS (SELECT pg_notify('` + NotifyChannel + `', $4) FROM (SELECT 1 FROM jobs LIMIT 1) j)
	SELECT m.id, m.site_id FROM made m JOIN due d ON d.id = m.site_id
	WHERE (SELECT count(*) FROM moved) >= 0 AND (SELECT count(*) FROM notified) >= 0
	ORDER BY d.n`

func (p *Store) EnqueueDueScans(ctx context.Context, now time.Time, limit int) ([]store.Scan, error) {
	out := []store.Scan{}
	if limit <= 0 {
		return out, nil
	}
	ids := make(pq.StringArray, limit)
	for i := range ids {
		ids[i] = store.NewID()
	}
	at := store.Now(now)
	scans, err := queryAll(ctx, p.db, "enqueue scheduled scans", func(row rowScanner) (store.Scan, error) {
		sc := store.Scan{Status: store.StatusQueued, Strategy: store.StrategyBoth, Trigger: store.TriggerSchedule, CreatedAt: at}
		return sc, row.Scan(&sc.ID, &sc.SiteID)
	}, enqueueDueSQL, at, limit, ids, store.KindScan, store.MaxAttemptsOf(store.ScanJob{}))
	if err != nil {
		return out, err
	}
	return append(out, scans...), nil
}
