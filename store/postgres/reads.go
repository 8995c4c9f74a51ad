package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lib/pq"

	"sitepulse/store"
)

// The reads of store.Reads: each one statement, the caller's membership inside it.

// plusScanner scans a row of some columns and then more: a reader of one table's columns
// (scanSite) reading a joined column or two besides.
type plusScanner struct {
	row   rowScanner
	extra []any
}

func (p plusScanner) Scan(dest ...any) error { return p.row.Scan(append(dest, p.extra...)...) }

// maybeScan reads scanCols from a LEFT JOIN that may have found no scan.
type maybeScan struct {
	id, siteID, status, strategy, trigger, err sql.NullString
	total, done, inFlight, found, audited      sql.NullInt64
	scores, summary                            []byte
	created, started, completed, pruned        sql.NullTime
	bytes                                      sql.NullInt64
}

func (m *maybeScan) dest() []any {
	return []any{&m.id, &m.siteID, &m.status, &m.strategy, &m.trigger, &m.total, &m.done, &m.scores, &m.err,
		&m.created, &m.started, &m.completed, &m.inFlight, &m.found, &m.audited, &m.summary, &m.bytes, &m.pruned}
}

// scan is the scan read, as scanScan makes it; nil when there was none.
func (m *maybeScan) scan() (*store.Scan, error) {
	if !m.id.Valid {
		return nil, nil
	}
	s := &store.Scan{ID: m.id.String, SiteID: m.siteID.String, Status: store.ScanStatus(m.status.String), Strategy: store.Strategy(m.strategy.String),
		Trigger: m.trigger.String, PagesTotal: int(m.total.Int64), PagesDone: int(m.done.Int64), Error: m.err.String,
		CreatedAt: m.created.Time.UTC(), StartedAt: timePtr(m.started), CompletedAt: timePtr(m.completed),
		AuditsInFlight: int(m.inFlight.Int64), PagesFound: int(m.found.Int64), PagesAudited: int(m.audited.Int64),
		Bytes: m.bytes.Int64, DetailsPrunedAt: timePtr(m.pruned)}
	if err := json.Unmarshal(m.scores, &s.Scores); err != nil {
		return nil, fmt.Errorf("scan %s scores: %w", s.ID, err)
	}
	if m.summary != nil {
		s.Summary = new(store.ScanSummary)
		if err := json.Unmarshal(m.summary, s.Summary); err != nil {
			return nil, fmt.Errorf("scan %s summary: %w", s.ID, err)
		}
	}
	return s, nil
}

// optionalID is id as a query argument, NULL when empty.
func optionalID(id string) any {
	if id == "" {
		return nil
	}
	return id
}

// scanListing reads a row of listingSQL.
func scanListing(row rowScanner) (store.SiteListing, error) {
	var l store.SiteListing
	var last maybeScan
	var broken pq.StringArray
	s, err := scanSite(plusScanner{row, append([]any{&l.WorkspaceName, &l.Triage.BudgetsBroken, &broken, &l.Triage.Regressions}, last.dest()...)})
	if err != nil {
		return l, err
	}
	l.Site, l.Triage.Broken = s, []string(broken)
	if l.Triage.Broken == nil {
		l.Triage.Broken = []string{}
	}
	l.LastScan, err = last.scan()
	return l, err
}

// listingSQL reads the sites the condition where keeps (of user $1's workspaces), in order, at
// most limit of them (empty: all), each with its workspace's name, triage and latest scan: the
// latest scans are probed for the sites kept only.
func listingSQL(where, order, limit, outer string) string {
	return `SELECT s.*, ` + scanCols + ` FROM (SELECT ` + siteCols + `, (SELECT w.name FROM workspaces w WHERE w.id = sites.workspace_id) AS workspace_name,
			budgets_broken, broken_budgets, regressions FROM sites
			WHERE ` + where + ` AND ` + readable("workspace_id", 1) + ` ORDER BY ` + order + limit + `) s
		LEFT JOIN LATERAL (SELECT * FROM scans WHERE site_id = s.id ORDER BY created_at DESC, id DESC LIMIT 1) c ON TRUE
		ORDER BY ` + outer
}

func (p *Store) SiteListings(ctx context.Context, userID, workspaceID string) ([]store.SiteListing, error) {
	if !uuidOK(userID) || workspaceID != "" && !uuidOK(workspaceID) {
		return []store.SiteListing{}, nil
	}
	return queryAll(ctx, p.db, "sites", scanListing, listingSQL("($2::uuid IS NULL OR workspace_id = $2)", "name, id", "", "s.name, s.id"),
		userID, optionalID(workspaceID))
}

// siteListingsPageSQL are the pages after and before a site ($4) of the user's: $2 the
// workspaces (NULL: every one of the user's), $3 the text the name holds, $5 the rows read (a page and one more, to know there
// is more). A cursor that is no site of the user's keeps no row.
var siteListingsPageSQL = map[bool]string{
	false: listingSQL(`($2::uuid[] IS NULL OR workspace_id = ANY($2::uuid[])) AND strpos(lower(name), lower($3)) > 0
		AND ($4::uuid IS NULL OR (name COLLATE "C", id) > (SELECT k.name COLLATE "C", k.id FROM sites k WHERE k.id = $4 AND `+readable("k.workspace_id", 1)+`))`,
		`name COLLATE "C", id`, " LIMIT $5", `s.name COLLATE "C", s.id`),
	true: listingSQL(`($2::uuid[] IS NULL OR workspace_id = ANY($2::uuid[])) AND strpos(lower(name), lower($3)) > 0
		AND (name COLLATE "C", id) < (SELECT k.name COLLATE "C", k.id FROM sites k WHERE k.id = $4 AND `+readable("k.workspace_id", 1)+`)`,
		`name COLLATE "C" DESC, id DESC`, " LIMIT $5", `s.name COLLATE "C", s.id`),
}

func (p *Store) SiteListingsPage(ctx context.Context, userID string, q store.ListingQuery) (store.ListingPage, error) {
	workspaces := slices.DeleteFunc(slices.Clone(q.Workspaces), func(id string) bool { return !uuidOK(id) })
	if !uuidOK(userID) || len(workspaces) == 0 && !q.AllWorkspaces || q.Limit < 1 {
		return store.ListingPage{Sites: []store.SiteListing{}}, nil
	}
	var listed any = pq.StringArray(workspaces)
	if q.AllWorkspaces {
		listed = nil // every workspace of the user's (the statement's readable condition)
	}
	if q.After != "" { // After wins
		q.Before = ""
	}
	cursor, before := q.After, q.Before != ""
	if before {
		cursor = q.Before
	}
	if cursor != "" && !uuidOK(cursor) {
		cursor, q.After, q.Before, before = "", "", "", false
	}
	for {
		sites, err := queryAll(ctx, p.db, "sites", scanListing, siteListingsPageSQL[before], userID, listed, q.Search, optionalID(cursor), q.Limit+1)
		if err != nil || len(sites) > 0 || cursor == "" {
			return q.Page(sites), err
		}
		// Nothing past the cursor: it names no site of the user's (any longer), or the last
		// one. Either way the list starts again at its first page.
		cursor, q.After, q.Before, before = "", "", "", false
	}
}

// pageDetailsSQL reads scan $1 of user $2 and its result of strategy $3 and path $4, or with
// $4 NULL of its worst page (analysis.WorstPage: the lowest performance score as a whole
// number, pages without one last, then the path byte by byte).
var pageDetailsSQL = `SELECT c.status, r.result FROM scans c JOIN sites s ON s.id = c.site_id
	LEFT JOIN LATERAL (SELECT r.result FROM page_results r
		WHERE r.scan_id = c.id AND r.scanned_at = c.created_at AND r.strategy = $3 AND r.result IS NOT NULL AND ($4::text IS NULL OR r.page_path = $4)
		ORDER BY trunc(r.m_performance) NULLS LAST, r.page_path COLLATE "C" LIMIT 1) r ON TRUE
	WHERE c.id = $1 AND ` + readable("s.workspace_id", 2)

func (p *Store) PageDetails(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) (store.PageDetails, error) {
	var d store.PageDetails
	if !uuidOK(userID, scanID) {
		return d, store.NotFound("scan")
	}
	var path any
	if pagePath != "" {
		path = pagePath
	}
	var raw []byte
	if err := p.db.QueryRowContext(ctx, pageDetailsSQL, scanID, userID, strategy, path).Scan(&d.ScanStatus, &raw); err != nil {
		return d, pgErr("scan", err)
	}
	if raw == nil {
		return d, nil
	}
	r, err := store.DecodeResult(raw)
	if err != nil {
		return d, fmt.Errorf("page result of scan %s: %w", scanID, err)
	}
	r.ScanID = scanID
	d.Found, d.Result = true, r
	return d, nil
}

// latestResultsSQL reads site $1 of user $2, its latest completed scan and, unless that scan is
// $3, the scan's successful results in page order: one row of NULLs when the site has no
// completed scan, no row when it is not the user's.
var latestResultsSQL = `SELECT ` + scanCols + `, r.result FROM sites s
	LEFT JOIN LATERAL (SELECT * FROM scans WHERE site_id = s.id AND status = 'complete'
		ORDER BY completed_at DESC, id DESC LIMIT 1) c ON TRUE
	LEFT JOIN page_results r ON r.scan_id = c.id AND r.scanned_at = c.created_at AND r.result IS NOT NULL AND c.id IS DISTINCT FROM $3::uuid
	WHERE s.id = $1 AND ` + readable("s.workspace_id", 2) + `
	ORDER BY r.page_path, r.strategy`

func (p *Store) LatestResults(ctx context.Context, userID, siteID, knownScanID string) (store.LatestResults, error) {
	var out store.LatestResults
	if !uuidOK(userID, siteID) {
		return out, store.NotFound("site")
	}
	if !uuidOK(knownScanID) {
		knownScanID = ""
	}
	rows, err := p.db.QueryContext(ctx, latestResultsSQL, siteID, userID, optionalID(knownScanID))
	if err != nil {
		return out, pgErr("latest results", err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		var m maybeScan
		var raw []byte
		if err := rows.Scan(append(m.dest(), &raw)...); err != nil {
			return out, pgErr("latest results", err)
		}
		if !found {
			found = true
			if out.Scan, err = m.scan(); err != nil {
				return out, err
			}
			if out.Scan != nil && out.Scan.ID != knownScanID {
				out.Results = []store.PageResult{}
			}
		}
		if raw == nil {
			continue
		}
		r, err := store.DecodeResult(raw)
		if err != nil {
			return out, fmt.Errorf("page result of scan %s: %w", out.Scan.ID, err)
		}
		r.ScanID = out.Scan.ID
		out.Results = append(out.Results, r)
	}
	if err := rows.Err(); err != nil {
		return out, pgErr("latest results", err)
	}
	if !found {
		return out, store.NotFound("site")
	}
	return out, nil
}

// latestTwoSQL reads site $1 of user $2, its two latest completed scans with the publish of
// each, and their page metrics as pageMetricsSQL reads them unless the scan is one of $3: newest scan first, each in page
// order; one row of NULLs when the site has no completed scan, no row when it is not the user's.
var latestTwoSQL = `SELECT ` + scanCols + `, c.pub_by, c.pub_on, r.page_path, r.page_url, r.strategy,
	ARRAY[r.m_performance, r.m_seo, r.m_accessibility, r.m_best_practices,
	r.m_lcp, r.m_cls, r.m_inp, r.m_fcp, r.m_ttfb, r.m_tbt, r.m_speed_index, r.m_tti]
	FROM sites s
	LEFT JOIN LATERAL (SELECT sc.*, p.published_by AS pub_by, p.published_on AS pub_on FROM scans sc
		LEFT JOIN publishes p ON p.scan_id = sc.id
		WHERE sc.site_id = s.id AND sc.status = 'complete' ORDER BY sc.completed_at DESC, sc.id DESC LIMIT 2) c ON TRUE
	LEFT JOIN page_results r ON r.scan_id = c.id AND r.scanned_at = c.created_at AND r.result IS NOT NULL AND NOT c.id = ANY($3::uuid[])
	WHERE s.id = $1 AND ` + readable("s.workspace_id", 2) + `
	ORDER BY c.completed_at DESC, c.id DESC, r.page_path, r.strategy`

func (p *Store) LatestTwo(ctx context.Context, userID, siteID string, known []string) (store.LatestTwo, error) {
	out := store.LatestTwo{Scans: []store.Scan{}, Metrics: [][]store.PageResult{}}
	if !uuidOK(userID, siteID) {
		return out, store.NotFound("site")
	}
	ids := pq.StringArray{}
	isKnown := map[string]bool{}
	for _, id := range known {
		if uuidOK(id) {
			ids, isKnown[id] = append(ids, id), true
		}
	}
	rows, err := p.db.QueryContext(ctx, latestTwoSQL, siteID, userID, ids)
	if err != nil {
		return out, pgErr("latest scans", err)
	}
	defer rows.Close()
	found := false
	var nums metricNums
	for rows.Next() {
		found = true
		var m maybeScan
		var pubBy, path, url, strategy sql.NullString
		var pubOn sql.NullTime
		var raw sql.RawBytes
		if err := rows.Scan(append(m.dest(), &pubBy, &pubOn, &path, &url, &strategy, &raw)...); err != nil {
			return out, pgErr("latest scans", err)
		}
		if !m.id.Valid {
			continue
		}
		if n := len(out.Scans); n == 0 || out.Scans[n-1].ID != m.id.String {
			sc, err := m.scan()
			if err != nil {
				return out, err
			}
			if n == 0 && pubOn.Valid {
				out.PublishedBy, out.PublishedOn = pubBy.String, timePtr(pubOn)
			}
			out.Scans = append(out.Scans, *sc)
			var metrics []store.PageResult
			if !isKnown[sc.ID] {
				metrics = []store.PageResult{}
			}
			out.Metrics = append(out.Metrics, metrics)
		}
		if !path.Valid {
			continue
		}
		r := store.PageResult{ScanID: m.id.String, PagePath: path.String, PageURL: url.String, Strategy: store.Strategy(strategy.String)}
		if err := parseMetrics(raw, &nums); err != nil {
			return out, pgErr("latest scans", err)
		}
		nums.into(&r)
		last := len(out.Metrics) - 1
		out.Metrics[last] = append(out.Metrics[last], r)
	}
	if err := rows.Err(); err != nil {
		return out, pgErr("latest scans", err)
	}
	if !found {
		return out, store.NotFound("site")
	}
	return out, nil
}

// createScanReportSQL finds scan $3 of user $4 with the user's role in its workspace and the
// user's active reports at $6, and inserts report $1 (its sealed token $11) when the role is one of $8, the workspace
// is $9 when that is set (an API key's), the scan is complete and fewer than $10 reports are
// active; it answers what it found and the title it stored (NULL: nothing stored), no row when
// the scan is not the user's.
const createScanReportSQL = `WITH t AS (SELECT c.id, c.status, c.details_pruned_at, s.workspace_id, m.role, s.name FROM scans c
		JOIN sites s ON s.id = c.site_id JOIN memberships m ON m.workspace_id = s.workspace_id AND m.user_id = $4
		WHERE c.id = $3),
	n AS (SELECT count(*) AS n FROM reports WHERE user_id = $4 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $6)),
	ins AS (INSERT INTO reports (id, token_hash, scan_id, user_id, title, created_at, expires_at, workspace_id, token_sealed)
		SELECT $1, $2, t.id, $4, coalesce($5, left(t.name, 181) || ' Performance Report'), $6, $7, t.workspace_id, $11 FROM t, n
		WHERE t.role = ANY($8::text[]) AND ($9::uuid IS NULL OR t.workspace_id = $9) AND t.status = 'complete' AND t.details_pruned_at IS NULL AND n.n < $10
		RETURNING title)
	SELECT t.status, t.details_pruned_at, t.workspace_id, t.role, n.n, (SELECT title FROM ins) FROM t, n`

func (p *Store) CreateScanReport(ctx context.Context, pr store.Principal, r store.Report, max int) (store.ScanReport, error) {
	var out store.ScanReport
	if err := r.Validate(); err != nil {
		return out, err
	}
	if !uuidOK(r.UserID, r.ScanID) {
		return out, store.NotFound("scan")
	}
	var title any
	if r.Title != "" {
		title = r.Title
	}
	var w store.Workspace
	var n int
	var stored sql.NullString
	var pruned sql.NullTime
	err := p.db.QueryRowContext(ctx, createScanReportSQL, r.ID, r.TokenHash, r.ScanID, r.UserID, title,
		store.Now(r.CreatedAt), nullTime(r.ExpiresAt), pq.StringArray(store.ReportRoles(pr, pr.KeyWorkspaceID)),
		optionalID(pr.KeyWorkspaceID), max, nullString(r.TokenSealed)).Scan(&out.ScanStatus, &pruned, &w.ID, &w.Role, &n, &stored)
	if err != nil {
		return out, pgErr("create report", err)
	}
	out.Title, out.DetailsPrunedAt = stored.String, timePtr(pruned)
	switch {
	case stored.Valid:
		return out, nil
	case store.Authorize(pr, w, store.ActReport) != nil:
		return out, store.Authorize(pr, w, store.ActReport)
	case out.ScanStatus != store.StatusComplete:
		return out, store.ErrScanNotComplete
	case out.DetailsPrunedAt != nil:
		return out, fmt.Errorf("report of a pruned scan: %w", store.ErrGone)
	case n >= max:
		return out, fmt.Errorf("%d active reports: %w", n, store.ErrLimit)
	}
	return out, fmt.Errorf("report of scan %s not stored", r.ScanID)
}

// exportScanSQL reads site $1 of user $2, its scan $3 (or with $3 NULL its latest completed
// one) and, when that scan is complete, its successful results in page order: the page and
// the scores and vitals from the float8 columns of migration 002, and only the parts of the
// stored result an export writes besides (parts, one small object), so no whole result is
// decoded. One row of NULLs when there is no such scan or it has no results; no row when the
// site is not the user's.
//
// With previous (the JSON export), each row also has the result's explain data and the
// previous completed scan's run of the same page and strategy (as previousPairsSQL picks that
// scan): its id, URL, metrics and explain data, NULL when it has none.
func exportScanSQL(parts string, previous bool) string {
	cols, joins := "", ""
	if previous {
		cols = `, r.explain, pc.id, pr.page_url, ARRAY[pr.m_performance, pr.m_seo, pr.m_accessibility, pr.m_best_practices,
	pr.m_lcp, pr.m_cls, pr.m_inp, pr.m_fcp, pr.m_ttfb, pr.m_tbt, pr.m_speed_index, pr.m_tti], pr.explain`
		joins = `
	LEFT JOIN LATERAL (SELECT p.id, p.created_at FROM scans p WHERE p.site_id = s.id AND p.status = 'complete' AND p.id <> c.id
		AND (p.completed_at < c.completed_at OR p.completed_at = c.completed_at AND p.id < c.id)
		ORDER BY p.completed_at DESC, p.id DESC LIMIT 1) pc ON c.status = 'complete'
	LEFT JOIN page_results pr ON pr.scan_id = pc.id AND pr.scanned_at = pc.created_at AND pr.page_path = r.page_path AND pr.strategy = r.strategy AND pr.result IS NOT NULL`
	}
	return `SELECT s.name, s.workspace_id, ` + scanCols + `, r.page_url, r.page_path, r.strategy,
	ARRAY[r.m_performance, r.m_seo, r.m_accessibility, r.m_best_practices,
	r.m_lcp, r.m_cls, r.m_inp, r.m_fcp, r.m_ttfb, r.m_tbt, r.m_speed_index, r.m_tti], ` + parts + cols + `
	FROM sites s
	LEFT JOIN LATERAL (SELECT * FROM scans WHERE site_id = s.id AND ($3::uuid IS NULL AND status = 'complete' OR id = $3)
		ORDER BY completed_at DESC, id DESC LIMIT 1) c ON TRUE
	LEFT JOIN page_results r ON r.scan_id = c.id AND r.scanned_at = c.created_at AND c.status = 'complete' AND r.result IS NOT NULL` + joins + `
	WHERE s.id = $1 AND ` + readable("s.workspace_id", 2) + `
	ORDER BY r.page_path, r.strategy`
}

// exportCSVSQL and exportJSONSQL are exportScanSQL with the parts the CSV export writes (CrUX,
// opportunities) and the JSON export (the third-party scripts and accessibility issues too,
// and what explains the run and the previous one).
var (
	exportCSVSQL  = exportScanSQL(`json_build_object('crux', r.result->'crux', 'opportunities', r.result->'opportunities')`, false)
	exportJSONSQL = exportScanSQL(`json_build_object('crux', r.result->'crux', 'opportunities', r.result->'opportunities',
		'thirdPartyScripts', r.result->'thirdPartyScripts', 'a11yIssues', r.result->'a11yIssues')`, true)
)

func (p *Store) ExportScan(ctx context.Context, userID, siteID, scanID string, full bool, head func(store.Site, *store.Scan) error, row func(r store.PageResult, previous *store.PageResult) error) error {
	if !uuidOK(userID, siteID) {
		return store.NotFound("site")
	}
	if scanID != "" && !uuidOK(scanID) {
		scanID = noSite // a well-formed id no scan has
	}
	query := exportCSVSQL
	if full {
		query = exportJSONSQL
	}
	rows, err := p.db.QueryContext(ctx, query, siteID, userID, optionalID(scanID))
	if err != nil {
		return pgErr("export", err)
	}
	defer rows.Close()
	// The first row's site and scan columns are read for head; every row repeats them, and
	// the later rows' copies go to RawBytes, which neither copies nor allocates.
	var name, workspaceID string
	var m maybeScan
	var path, url, strategy, prevID, prevURL sql.NullString
	var metrics, parts, explain, prevMetrics, prevExplain sql.RawBytes
	dest := append(append([]any{&name, &workspaceID}, m.dest()...), &url, &path, &strategy, &metrics, &parts)
	if full {
		dest = append(dest, &explain, &prevID, &prevURL, &prevMetrics, &prevExplain)
	}
	scanID = ""
	var nums metricNums
	first := true
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return pgErr("export", err)
		}
		if first {
			first = false
			sc, err := m.scan()
			if err != nil {
				return err
			}
			if err := head(store.Site{ID: siteID, Name: name, WorkspaceID: workspaceID}, sc); err != nil {
				return err
			}
			scanID = m.id.String
			skip := make([]sql.RawBytes, 2+len(m.dest()))
			for i := range skip {
				dest[i] = &skip[i]
			}
		}
		if !path.Valid {
			continue
		}
		r := store.PageResult{ScanID: scanID, PageURL: url.String, PagePath: path.String, Strategy: store.Strategy(strategy.String)}
		if err := parseMetrics(metrics, &nums); err != nil {
			return pgErr("export", err)
		}
		nums.into(&r)
		if !full {
			r.CoreWebVitals.TBT, r.CoreWebVitals.SpeedIndex, r.CoreWebVitals.TTI = nil, nil, nil
		}
		if err := json.Unmarshal(parts, &r); err != nil {
			return fmt.Errorf("page result %s of scan %s: %w", r.PagePath, scanID, err)
		}
		var previous *store.PageResult
		if full {
			if r.Explain, err = store.DecodeExplain(explain); err != nil {
				return fmt.Errorf("page result %s of scan %s: %w", r.PagePath, scanID, err)
			}
			if prevURL.Valid {
				previous = &store.PageResult{ScanID: prevID.String, PageURL: prevURL.String, PagePath: r.PagePath, Strategy: r.Strategy}
				if err := parseMetrics(prevMetrics, &nums); err != nil {
					return pgErr("export", err)
				}
				nums.into(previous)
				if previous.Explain, err = store.DecodeExplain(prevExplain); err != nil {
					return fmt.Errorf("page result %s of scan %s: %w", r.PagePath, prevID.String, err)
				}
			}
		}
		if err := row(r, previous); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return pgErr("export", err)
	}
	if first {
		return store.NotFound("site")
	}
	return nil
}

// scanViewSQL reads scan $1 of user $2 with its site's name, domain and budgets.
var scanViewSQL = `SELECT ` + scanCols + `, s.name, s.domain,
	(SELECT coalesce(json_object_agg(b.metric, json_build_object('threshold', b.threshold, 'strategy', b.strategy)), '{}')
		FROM budgets b WHERE b.site_id = s.id)
	FROM scans c JOIN sites s ON s.id = c.site_id WHERE c.id = $1 AND ` + readable("s.workspace_id", 2)

func (p *Store) ScanView(ctx context.Context, userID, scanID string) (store.ScanView, error) {
	var v store.ScanView
	if !uuidOK(userID, scanID) {
		return v, store.NotFound("scan")
	}
	var budgets []byte
	sc, err := scanScan(plusScanner{p.db.QueryRowContext(ctx, scanViewSQL, scanID, userID), []any{&v.SiteName, &v.SiteDomain, &budgets}})
	if err != nil {
		return v, pgErr("scan", err)
	}
	v.Scan = sc
	if err := json.Unmarshal(budgets, &v.Budgets); err != nil {
		return v, fmt.Errorf("budgets of scan %s: %w", scanID, err)
	}
	return v, nil
}
