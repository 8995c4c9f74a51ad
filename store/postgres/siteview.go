package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

// rowScanFunc is a rowScanner made of a function: a row read by one scanner (scanSite) with
// more columns after its own.
type rowScanFunc func(dest ...any) error

func (f rowScanFunc) Scan(dest ...any) error { return f(dest...) }

// siteAndWorkspaceSQL reads site $1 with its workspace and user $2's role there: no row when the
// user is not a member.
var siteAndWorkspaceSQL = `WITH s AS (SELECT ` + siteCols + ` FROM sites WHERE id = $1)
	SELECT s.*, w.id, w.name, w.created_at, w.retention_days, m.role FROM s
	JOIN memberships m ON m.workspace_id = s.workspace_id AND m.user_id = $2
	JOIN workspaces w ON w.id = s.workspace_id`

func (p *Store) SiteAndWorkspace(ctx context.Context, userID, siteID string) (store.Site, store.Workspace, error) {
	var w store.Workspace
	if !uuidOK(userID, siteID) {
		return store.Site{}, w, store.NotFound("site")
	}
	site, err := scanSite(rowScanFunc(func(dest ...any) error {
		return p.db.QueryRowContext(ctx, siteAndWorkspaceSQL, siteID, userID).Scan(append(dest,
			&w.ID, &w.Name, &w.CreatedAt, &w.RetentionDays, &w.Role)...)
	}))
	w.CreatedAt = w.CreatedAt.UTC()
	return site, w, pgErr("site", err)
}

// siteScansSQL is the history ($3 newest scans of site $1 of user $2, without summaries: the
// history table shows none) and the $4 most recently completed scans, in one statement, each row
// marked with its list: 'h' or 'c'.
var siteScansSQL = `(SELECT 'h', ` + strings.Replace(scanCols, "c.summary", "NULL::jsonb", 1) + ` FROM scans c JOIN sites s ON s.id = c.site_id
	WHERE c.site_id = $1 AND ` + readable("s.workspace_id", 2) + ` ORDER BY c.created_at DESC, c.id DESC LIMIT $3)
	UNION ALL
	(SELECT 'c', ` + scanCols + ` FROM scans c JOIN sites s ON s.id = c.site_id
	WHERE c.site_id = $1 AND ` + readable("s.workspace_id", 2) + ` AND c.status = 'complete'
	ORDER BY c.completed_at DESC, c.id DESC LIMIT $4)`

// siteDetailsSQL reads what a site's page needs beside its scans, in one statement, for site $1
// of user $2: the page metrics of scans $3 (a uuid[]), the errors of scan $4, the latest $6
// publishes since $5, the publish of scan $7, the budgets and the alert rules. Each row says its
// kind: 'm' metrics, 'e' an error, 'p' a publish of the window, 'l' the scan's publish (as JSON
// in doc), 'b' the budgets and 'r' the rules (as budgetInputsSQL's JSON). Only an owned site
// has rows: 'b' and 'r' always.
var siteDetailsSQL = `WITH site AS (SELECT s.id FROM sites s WHERE s.id = $1 AND ` + readable("s.workspace_id", 2) + `),
	pub AS (SELECT p.*, coalesce(p.scan_id::text, '') AS scan FROM site JOIN publishes p ON p.site_id = site.id)
	SELECT 'm' AS kind, r.scan_id::text AS scan, r.page_path, r.page_url, r.strategy,
		ARRAY[r.m_performance, r.m_seo, r.m_accessibility, r.m_best_practices,
		r.m_lcp, r.m_cls, r.m_inp, r.m_fcp, r.m_ttfb, r.m_tbt, r.m_speed_index, r.m_tti] AS nums, NULL::text AS doc
	FROM site JOIN scans c ON c.site_id = site.id AND c.id = ANY($3::uuid[])
	JOIN page_results r ON r.scan_id = c.id AND r.scanned_at = c.created_at AND r.result IS NOT NULL
	UNION ALL
	SELECT 'e', r.scan_id::text, r.page_path, r.page_url, r.strategy, NULL, r.error
	FROM site JOIN scans c ON c.site_id = site.id AND c.id = $4::uuid
	JOIN page_results r ON r.scan_id = c.id AND r.scanned_at = c.created_at AND r.result IS NULL
	UNION ALL
	SELECT 'p', '', '', '', '', NULL, doc FROM (SELECT json_build_object('id', p.id, 'siteId', p.site_id,
		'platformEventId', p.platform_event_id, 'publishedBy', p.published_by, 'publishedOn', p.published_on,
		'domains', p.domains, 'scanId', p.scan, 'commit', p.commit_sha)::text AS doc FROM pub p WHERE p.published_on >= $5
		ORDER BY p.published_on DESC, p.id DESC LIMIT $6) latest
	UNION ALL
	SELECT 'l', '', '', '', '', NULL, json_build_object('id', p.id, 'siteId', p.site_id,
		'platformEventId', p.platform_event_id, 'publishedBy', p.published_by, 'publishedOn', p.published_on,
		'domains', p.domains, 'scanId', p.scan, 'commit', p.commit_sha)::text FROM pub p WHERE p.scan_id = $7::uuid
	UNION ALL
	SELECT 'b', '', '', '', '', NULL, (SELECT coalesce(json_object_agg(b.metric, json_build_object('threshold', b.threshold,
		'strategy', b.strategy)), '{}') FROM budgets b WHERE b.site_id = site.id)::text FROM site
	UNION ALL
	SELECT 'r', '', '', '', '', NULL, (SELECT coalesce(json_agg(json_build_object('id', r.id, 'metric', r.metric,
		'operator', r.operator, 'threshold', r.threshold, 'createdAt', r.created_at) ORDER BY r.created_at, r.id), '[]')
		FROM alert_rules r WHERE r.site_id = site.id)::text FROM site
	ORDER BY kind, scan, page_path, strategy`

func (p *Store) SiteView(ctx context.Context, userID, siteID string, history, completed, publishes int) (store.SiteView, error) {
	v := store.SiteView{History: []store.Scan{}, Completed: []store.Scan{}, Metrics: map[string][]store.PageResult{},
		Errors: []store.PageError{}, Publishes: []store.Publish{}, Budgets: map[string]store.Budget{}, Rules: []store.AlertRule{}}
	if !uuidOK(userID, siteID) {
		return v, store.NotFound("site")
	}
	rows, err := p.db.QueryContext(ctx, siteScansSQL, siteID, userID, history, completed)
	if err != nil {
		return v, pgErr("site scans", err)
	}
	defer rows.Close()
	for rows.Next() {
		var list string
		sc, err := scanScan(rowScanFunc(func(dest ...any) error { return rows.Scan(append([]any{&list}, dest...)...) }))
		if err != nil {
			return v, pgErr("site scans", err)
		}
		if list == "h" {
			v.History = append(v.History, sc)
		} else {
			v.Completed = append(v.Completed, sc)
		}
	}
	if err := rows.Err(); err != nil {
		return v, pgErr("site scans", err)
	}
	rows.Close()
	// UNION ALL promises no order: each list is put back in its own.
	sort.SliceStable(v.History, func(i, j int) bool {
		a, b := v.History[i], v.History[j]
		return a.CreatedAt.After(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID > b.ID
	})
	sort.SliceStable(v.Completed, func(i, j int) bool {
		a, b := v.Completed[i], v.Completed[j]
		return a.CompletedAt.After(*b.CompletedAt) || a.CompletedAt.Equal(*b.CompletedAt) && a.ID > b.ID
	})

	metricsOf := []string{}
	var errorsOf, publishOf any
	since := time.Time{}
	for i, c := range v.Completed {
		if i < 2 {
			metricsOf = append(metricsOf, c.ID)
		}
		since = *c.CompletedAt
	}
	if len(v.Completed) > 0 {
		publishOf = v.Completed[0].ID
	}
	if len(v.History) > 0 {
		errorsOf = v.History[0].ID
	}
	rows, err = p.db.QueryContext(ctx, siteDetailsSQL, siteID, userID, pq.StringArray(metricsOf), errorsOf, store.Now(since), publishes, publishOf)
	if err != nil {
		return v, pgErr("site details", err)
	}
	defer rows.Close()
	var nums metricNums
	owned := false
	for rows.Next() {
		var kind, scan, path, url, strategy string
		var raw sql.RawBytes
		var doc sql.NullString
		if err := rows.Scan(&kind, &scan, &path, &url, &strategy, &raw, &doc); err != nil {
			return v, pgErr("site details", err)
		}
		switch kind {
		case "m":
			if err := parseMetrics(raw, &nums); err != nil {
				return v, pgErr("site details", err)
			}
			r := store.PageResult{ScanID: scan, PagePath: path, PageURL: url, Strategy: store.Strategy(strategy)}
			nums.into(&r)
			v.Metrics[scan] = append(v.Metrics[scan], r)
		case "e":
			v.Errors = append(v.Errors, store.PageError{ScanID: scan, PagePath: path, PageURL: url, Strategy: store.Strategy(strategy), Error: doc.String})
		case "p", "l":
			var pub struct {
				ID, SiteID, PlatformEventID, PublishedBy, ScanID, Commit string
				PublishedOn                                              time.Time
				Domains                                                  []string
			}
			if err := json.Unmarshal([]byte(doc.String), &pub); err != nil {
				return v, fmt.Errorf("publish of site %s: %w", siteID, err)
			}
			x := store.Publish{ID: pub.ID, SiteID: pub.SiteID, PlatformEventID: pub.PlatformEventID, PublishedBy: pub.PublishedBy,
				PublishedOn: pub.PublishedOn.UTC(), Domains: nonNil(pub.Domains), Commit: pub.Commit, ScanID: pub.ScanID}
			if kind == "l" {
				v.Publish = &x
			} else {
				v.Publishes = append(v.Publishes, x)
			}
		case "b":
			owned = true
			if err := json.Unmarshal([]byte(doc.String), &v.Budgets); err != nil {
				return v, fmt.Errorf("budgets of site %s: %w", siteID, err)
			}
		case "r":
			if v.Rules, err = decodeRules(siteID, []byte(doc.String)); err != nil {
				return v, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return v, pgErr("site details", err)
	}
	if !owned {
		return v, store.NotFound("site")
	}
	sort.SliceStable(v.Publishes, func(i, j int) bool {
		a, b := v.Publishes[i], v.Publishes[j]
		return a.PublishedOn.Before(b.PublishedOn) || a.PublishedOn.Equal(b.PublishedOn) && a.ID < b.ID
	})
	return v, nil
}
