package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lib/pq"

	"sitepulse/store"
)

const scanCols = `c.id, c.site_id, c.status, c.strategy, c.trigger, c.pages_total, c.pages_done, c.scores,
	c.error, c.created_at, c.started_at, c.completed_at, c.audits_in_flight, c.pages_found, c.pages_audited,
	c.summary, c.bytes, c.details_pruned_at`

func scanScan(row rowScanner) (store.Scan, error) {
	var s store.Scan
	var scores, summary []byte
	var started, completed, pruned sql.NullTime
	err := row.Scan(&s.ID, &s.SiteID, &s.Status, &s.Strategy, &s.Trigger, &s.PagesTotal, &s.PagesDone,
		&scores, &s.Error, &s.CreatedAt, &started, &completed, &s.AuditsInFlight, &s.PagesFound, &s.PagesAudited,
		&summary, &s.Bytes, &pruned)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(scores, &s.Scores); err != nil {
		return s, fmt.Errorf("scan %s scores: %w", s.ID, err)
	}
	if summary != nil {
		s.Summary = new(store.ScanSummary)
		if err := json.Unmarshal(summary, s.Summary); err != nil {
			return s, fmt.Errorf("scan %s summary: %w", s.ID, err)
		}
	}
	s.CreatedAt, s.StartedAt, s.CompletedAt, s.DetailsPrunedAt = s.CreatedAt.UTC(), timePtr(started), timePtr(completed), timePtr(pruned)
	return s, nil
}

func (p *Store) Scan(ctx context.Context, userID, scanID string) (store.Scan, error) {
	if !uuidOK(userID, scanID) {
		return store.Scan{}, store.NotFound("scan")
	}
	s, err := scanScan(p.db.QueryRowContext(ctx, `SELECT `+scanCols+` FROM scans c
		JOIN sites s ON s.id = c.site_id WHERE c.id = $1 AND `+readable("s.workspace_id", 2), scanID, userID))
	return s, pgErr("scan", err)
}

func (p *Store) ScansByID(ctx context.Context, ids []string) (map[string]store.Scan, error) {
	out := map[string]store.Scan{}
	valid := pq.StringArray{}
	for _, id := range ids {
		if uuidOK(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	list, err := queryAll(ctx, p.db, "scans by id", scanScan, `SELECT `+scanCols+` FROM scans c WHERE c.id = ANY($1::uuid[])`, valid)
	for _, sc := range list {
		out[sc.ID] = sc
	}
	return out, err
}

func (p *Store) ScansOf(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error) {
	return p.scansOf(ctx, userID, siteID, limit, `TRUE ORDER BY c.created_at DESC, c.id DESC`)
}

func (p *Store) ScanWait(ctx context.Context, userID, scanID string) (store.ScanWait, error) {
	var w store.ScanWait
	if !uuidOK(userID, scanID) {
		return w, nil
	}
	err := p.db.QueryRowContext(ctx, `SELECT j.last_error, j.run_at FROM jobs j
		JOIN scans c ON c.id = j.scan_id JOIN sites s ON s.id = c.site_id
		WHERE j.scan_id = $1 AND `+readable("s.workspace_id", 2)+` AND j.state = 'available' AND j.last_error <> ''
		ORDER BY j.id DESC LIMIT 1`, scanID, userID).Scan(&w.Reason, &w.RunAt)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ScanWait{}, nil
	}
	w.RunAt = w.RunAt.UTC()
	return w, pgErr("scan wait", err)
}

func (p *Store) CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error) {
	return p.scansOf(ctx, userID, siteID, limit, `c.status = 'complete' ORDER BY c.completed_at DESC, c.id DESC`)
}

func (p *Store) LatestCompletedScan(ctx context.Context, userID, siteID string) (store.Scan, error) {
	scans, err := p.CompletedScans(ctx, userID, siteID, 1)
	if err != nil {
		return store.Scan{}, err
	}
	if len(scans) == 0 {
		return store.Scan{}, store.NotFound("completed scan")
	}
	return scans[0], nil
}

// scansOf checks the owner in the same query; only an empty answer needs a second look to tell
// "not yours" from "no scans".
func (p *Store) scansOf(ctx context.Context, userID, siteID string, limit int, where string) ([]store.Scan, error) {
	if !uuidOK(userID, siteID) {
		return nil, store.NotFound("site")
	}
	if limit <= 0 {
		limit = 1 << 30
	}
	scans, err := queryAll(ctx, p.db, "scans", scanScan, `SELECT `+scanCols+` FROM scans c JOIN sites s ON s.id = c.site_id
		WHERE c.site_id = $1 AND `+readable("s.workspace_id", 3)+` AND `+where+` LIMIT $2`, siteID, limit, userID)
	if err != nil || len(scans) > 0 {
		return scans, err
	}
	if err := p.owns(ctx, p.db, userID, siteID); err != nil {
		return nil, err
	}
	return scans, nil
}

// ownsScan answers whether userID owns the site of scanID.
func (p *Store) ownsScan(ctx context.Context, userID, scanID string) error {
	if !uuidOK(userID, scanID) {
		return store.NotFound("scan")
	}
	var one int
	err := p.db.QueryRowContext(ctx, `SELECT 1 FROM scans c JOIN sites s ON s.id = c.site_id
		WHERE c.id = $1 AND `+readable("s.workspace_id", 2), scanID, userID).Scan(&one)
	return pgErr("scan", err)
}

func (p *Store) PageResults(ctx context.Context, userID, scanID string) ([]store.PageResult, error) {
	out := []store.PageResult{}
	err := p.eachResult(ctx, `r.result`, userID, scanID, func(r store.PageResult) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// exportResultSQL is the part of a stored result store.ExportFields keeps, cut out in the
// database: the export decodes a few hundred bytes of each result rather than all of it.
const exportResultSQL = `jsonb_build_object('pageUrl', r.result->'pageUrl', 'pagePath', r.result->'pagePath',
	'strategy', r.result->'strategy', 'lighthouseVersion', r.result->'lighthouseVersion', 'runs', r.result->'runs',
	'scores', r.result->'scores', 'coreWebVitals', r.result->'coreWebVitals', 'crux', r.result->'crux',
	'opportunities', r.result->'opportunities', 'thirdPartyScripts', r.result->'thirdPartyScripts',
	'a11yIssues', r.result->'a11yIssues')`

func (p *Store) EachPageResult(ctx context.Context, userID, scanID string, fn func(store.PageResult) error) error {
	return p.eachResult(ctx, exportResultSQL, userID, scanID, fn)
}

// eachResult streams column (the stored result, or a part of it) of each successful result of
// a scan of userID's, in page order.
func (p *Store) eachResult(ctx context.Context, column, userID, scanID string, fn func(store.PageResult) error) error {
	if !uuidOK(userID, scanID) {
		return store.NotFound("scan")
	}
	// One query: the owner check rides along, so a scan of someone else streams nothing and an
	// empty result needs the second look below to tell "not yours" from "no results".
	rows, err := p.db.QueryContext(ctx, `SELECT `+column+` FROM page_results r
		JOIN scans c ON c.id = r.scan_id JOIN sites s ON s.id = c.site_id
		WHERE r.scan_id = $1 AND `+readable("s.workspace_id", 2)+` AND r.result IS NOT NULL
		ORDER BY r.page_path, r.strategy`, scanID, userID)
	if err != nil {
		return pgErr("page results", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return pgErr("page results", err)
		}
		r, err := store.DecodeResult(raw)
		if err != nil {
			return fmt.Errorf("page result of scan %s: %w", scanID, err)
		}
		r.ScanID = scanID
		n++
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return pgErr("page results", err)
	}
	if n == 0 {
		return p.ownsScan(ctx, userID, scanID)
	}
	return nil
}

func (p *Store) PageResult(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) (store.PageResult, error) {
	if !uuidOK(userID, scanID) {
		return store.PageResult{}, store.NotFound("scan")
	}
	var raw, explain []byte
	err := p.db.QueryRowContext(ctx, `SELECT r.result, r.explain FROM page_results r
		JOIN scans c ON c.id = r.scan_id JOIN sites s ON s.id = c.site_id
		WHERE r.scan_id = $1 AND `+readable("s.workspace_id", 2)+` AND r.page_path = $3 AND r.strategy = $4 AND r.result IS NOT NULL`,
		scanID, userID, pagePath, strategy).Scan(&raw, &explain)
	if err == sql.ErrNoRows {
		if err := p.ownsScan(ctx, userID, scanID); err != nil {
			return store.PageResult{}, err
		}
		return store.PageResult{}, store.NotFound("page result")
	}
	if err != nil {
		return store.PageResult{}, pgErr("page result", err)
	}
	r, err := store.DecodeResult(raw)
	if err != nil {
		return r, err
	}
	r.ScanID = scanID
	r.Explain, err = store.DecodeExplain(explain)
	return r, err
}

func (p *Store) PageErrors(ctx context.Context, userID, scanID string) ([]store.PageError, error) {
	if !uuidOK(userID, scanID) {
		return nil, store.NotFound("scan")
	}
	// One statement: the owned scan left-joined to its errors gives one row of NULLs when it has
	// none and no row when it is not the user's.
	rows, err := p.db.QueryContext(ctx, `SELECT r.page_path, r.page_url, r.strategy, r.error
		FROM scans c JOIN sites s ON s.id = c.site_id
		LEFT JOIN page_results r ON r.scan_id = c.id AND r.result IS NULL
		WHERE c.id = $1 AND `+readable("s.workspace_id", 2)+`
		ORDER BY r.page_path, r.strategy`, scanID, userID)
	if err != nil {
		return nil, pgErr("page errors", err)
	}
	defer rows.Close()
	out := []store.PageError{}
	owned := false
	for rows.Next() {
		owned = true
		var path, url, strategy, msg sql.NullString
		if err := rows.Scan(&path, &url, &strategy, &msg); err != nil {
			return nil, pgErr("page errors", err)
		}
		if path.Valid {
			out = append(out, store.PageError{ScanID: scanID, PagePath: path.String, PageURL: url.String, Strategy: store.Strategy(strategy.String), Error: msg.String})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr("page errors", err)
	}
	if !owned {
		return nil, store.NotFound("scan")
	}
	return out, nil
}
