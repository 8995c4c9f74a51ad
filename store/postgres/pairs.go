package postgres

import (
	"context"
	"strings"

	"sitepulse/store"
)

// The reads of store.Explains' comparisons: each one statement, the reader's membership
// inside it, both sides' runs with their explain data.

// pairsSQL reads scan $1 (b, the later) of user $2, the scan the CTE a picks (the earlier, of
// the same site) and, by path then strategy, the runs both have: their metric columns (as
// pageMetricsSQL reads them) and explain data. One row of NULLs past b's columns when a is
// missing or they share no run; no row when b is not the user's.
func pairsSQL(from string) string {
	metrics := func(r string) string {
		return strings.NewReplacer("r.", r+".").Replace(`ARRAY[r.m_performance, r.m_seo, r.m_accessibility, r.m_best_practices,
			r.m_lcp, r.m_cls, r.m_inp, r.m_fcp, r.m_ttfb, r.m_tbt, r.m_speed_index, r.m_tti]`)
	}
	return `WITH b AS (SELECT c.* FROM scans c JOIN sites s ON s.id = c.site_id WHERE c.id = $1 AND ` + readable("s.workspace_id", 2) + `),
	a AS (` + from + `)
	SELECT ` + strings.ReplaceAll(scanCols, "c.", "b.") + `, ` + strings.ReplaceAll(scanCols, "c.", "a.") + `,
		p.page_path, p.strategy, p.url_a, p.m_a, p.explain_a, p.runs_a, p.url_b, p.m_b, p.explain_b, p.runs_b
	FROM b LEFT JOIN a ON a.site_id = b.site_id
	LEFT JOIN LATERAL (SELECT ra.page_path, ra.strategy, ra.page_url AS url_a, ` + metrics("ra") + ` AS m_a, ra.explain AS explain_a,
			coalesce((ra.result->>'runs')::int, 0) AS runs_a, rb.page_url AS url_b, ` + metrics("rb") + ` AS m_b, rb.explain AS explain_b,
			coalesce((rb.result->>'runs')::int, 0) AS runs_b
		FROM page_results ra JOIN page_results rb ON rb.scan_id = b.id AND rb.page_path = ra.page_path AND rb.strategy = ra.strategy
			AND rb.result IS NOT NULL
		WHERE ra.scan_id = a.id AND ra.result IS NOT NULL ORDER BY ra.page_path, ra.strategy) p ON TRUE`
}

// comparePairsSQL: a is scan $3, when it is of b's site.
var comparePairsSQL = pairsSQL(`SELECT c.* FROM scans c WHERE c.id = $3`)

// previousPairsSQL: a is b's site's latest completed scan completed before b (any, while b is
// unfinished).
var previousPairsSQL = pairsSQL(`SELECT c.* FROM scans c, b WHERE c.site_id = b.site_id AND c.status = 'complete' AND c.id <> b.id
		AND (b.completed_at IS NULL OR c.completed_at < b.completed_at OR c.completed_at = b.completed_at AND c.id < b.id)
		ORDER BY c.completed_at DESC, c.id DESC LIMIT 1`)

func (p *Store) ComparePairs(ctx context.Context, userID, fromScanID, toScanID string) (store.ScanPairs, error) {
	if !uuidOK(userID, fromScanID, toScanID) {
		return store.ScanPairs{}, store.NotFound("scan")
	}
	out, err := p.pairs(ctx, comparePairsSQL, toScanID, userID, fromScanID)
	if err == nil && out.From == nil {
		return store.ScanPairs{}, store.NotFound("scan")
	}
	return out, err
}

func (p *Store) PreviousPairs(ctx context.Context, userID, scanID string) (store.ScanPairs, error) {
	if !uuidOK(userID, scanID) {
		return store.ScanPairs{}, store.NotFound("scan")
	}
	return p.pairs(ctx, previousPairsSQL, scanID, userID)
}

// pairs runs a pairsSQL statement.
func (p *Store) pairs(ctx context.Context, query string, args ...any) (store.ScanPairs, error) {
	out := store.ScanPairs{Pairs: []store.RunPair{}}
	rows, err := p.db.QueryContext(ctx, query, args...)
	if err != nil {
		return out, pgErr("scan pairs", err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		var to, from maybeScan
		var path, strategy, urlA, urlB *string
		var mA, mB, explainA, explainB []byte
		var runsA, runsB *int
		dest := append(append(to.dest(), from.dest()...), &path, &strategy, &urlA, &mA, &explainA, &runsA, &urlB, &mB, &explainB, &runsB)
		if err := rows.Scan(dest...); err != nil {
			return out, pgErr("scan pairs", err)
		}
		if !found {
			found = true
			t, err := to.scan()
			if err != nil {
				return out, err
			}
			out.To = *t
			if out.From, err = from.scan(); err != nil {
				return out, err
			}
		}
		if path == nil {
			continue
		}
		side := func(scanID, url string, m, explain []byte, runs *int) (store.PageResult, error) {
			r := store.PageResult{ScanID: scanID, PagePath: *path, PageURL: url, Strategy: store.Strategy(*strategy), Runs: *runs}
			var nums metricNums
			if err := parseMetrics(m, &nums); err != nil {
				return r, err
			}
			nums.into(&r)
			r.Explain, err = store.DecodeExplain(explain)
			return r, err
		}
		var pair store.RunPair
		if pair.Before, err = side(out.From.ID, *urlA, mA, explainA, runsA); err != nil {
			return out, pgErr("scan pairs", err)
		}
		if pair.After, err = side(out.To.ID, *urlB, mB, explainB, runsB); err != nil {
			return out, pgErr("scan pairs", err)
		}
		out.Pairs = append(out.Pairs, pair)
	}
	if err := rows.Err(); err != nil {
		return out, pgErr("scan pairs", err)
	}
	if !found {
		return out, store.NotFound("scan")
	}
	return out, nil
}
