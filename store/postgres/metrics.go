package postgres

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/lib/pq"

	"sitepulse/store"
)

// pageMetricsSQL reads scores and vitals from the float8 columns of migration 002, computed when
// a result is saved, so a 200-page scan neither detoasts its results nor does any jsonb work. It
// is prepared once per pool: planning the join took about as long as running it.
//
// The twelve numbers travel as one float8[]: lib/pq hands over an array's text as it is, where it
// parses and boxes each float8 column into an interface (one allocation per value, 4,800 for
// 200 pages); parseMetrics reads the array text itself.
var pageMetricsSQL = `SELECT r.page_path, r.page_url, r.strategy,
	ARRAY[r.m_performance, r.m_seo, r.m_accessibility, r.m_best_practices,
	r.m_lcp, r.m_cls, r.m_inp, r.m_fcp, r.m_ttfb, r.m_tbt, r.m_speed_index, r.m_tti]
	FROM page_results r JOIN scans c ON c.id = r.scan_id JOIN sites s ON s.id = c.site_id
	WHERE r.scan_id = $1 AND ` + readable("s.workspace_id", 2) + ` AND r.result IS NOT NULL
	ORDER BY r.page_path, r.strategy`

func (p *Store) PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error) {
	if !uuidOK(userID, scanID) {
		return nil, store.NotFound("scan")
	}
	rows, err := p.db.QueryContext(ctx, pageMetricsSQL, scanID, userID)
	if err != nil {
		return nil, pgErr("page metrics", err)
	}
	defer rows.Close()
	out := []store.PageResult{}
	var raw sql.RawBytes
	var nums metricNums
	for rows.Next() {
		r := store.PageResult{ScanID: scanID}
		if err := rows.Scan(&r.PagePath, &r.PageURL, &r.Strategy, &raw); err != nil {
			return nil, pgErr("page metrics", err)
		}
		if err := parseMetrics(raw, &nums); err != nil {
			return nil, pgErr("page metrics", err)
		}
		nums.into(&r)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr("page metrics", err)
	}
	if len(out) == 0 {
		if err := p.ownsScan(ctx, userID, scanID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pageMetricsOfSQL is pageMetricsSQL for several scans ($1, a uuid[]) of user $2. Each scan's
// rows come from its own index scan in page order (the LATERAL runs once per scan), so nothing
// sorts the rows of all scans together; with "scan_id = ANY" and one ORDER BY it measured slower
// than one query per scan.
var pageMetricsOfSQL = `SELECT r.scan_id, r.page_path, r.page_url, r.strategy,
	ARRAY[r.m_performance, r.m_seo, r.m_accessibility, r.m_best_practices,
	r.m_lcp, r.m_cls, r.m_inp, r.m_fcp, r.m_ttfb, r.m_tbt, r.m_speed_index, r.m_tti]
	FROM unnest($1::uuid[]) AS q(id)
	JOIN scans c ON c.id = q.id JOIN sites s ON s.id = c.site_id AND ` + readable("s.workspace_id", 2) + `
	CROSS JOIN LATERAL (SELECT r.scan_id, r.page_path, r.page_url, r.strategy, r.m_performance, r.m_seo, r.m_accessibility,
		r.m_best_practices, r.m_lcp, r.m_cls, r.m_inp, r.m_fcp, r.m_ttfb, r.m_tbt, r.m_speed_index, r.m_tti
		FROM page_results r WHERE r.scan_id = q.id AND r.scanned_at = c.created_at AND r.result IS NOT NULL
		ORDER BY r.page_path, r.strategy) r`

func (p *Store) PageMetricsOf(ctx context.Context, userID string, scanIDs []string) (map[string][]store.PageResult, error) {
	out := map[string][]store.PageResult{}
	ids := make([]string, 0, len(scanIDs))
	for _, id := range scanIDs {
		if uuidOK(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || !uuidOK(userID) {
		return out, nil
	}
	rows, err := p.db.QueryContext(ctx, pageMetricsOfSQL, pq.Array(ids), userID)
	if err != nil {
		return nil, pgErr("page metrics", err)
	}
	defer rows.Close()
	var raw sql.RawBytes
	var nums metricNums
	for rows.Next() {
		var r store.PageResult
		if err := rows.Scan(&r.ScanID, &r.PagePath, &r.PageURL, &r.Strategy, &raw); err != nil {
			return nil, pgErr("page metrics", err)
		}
		if err := parseMetrics(raw, &nums); err != nil {
			return nil, pgErr("page metrics", err)
		}
		nums.into(&r)
		out[r.ScanID] = append(out[r.ScanID], r)
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr("page metrics", err)
	}
	return out, nil
}

// metricNums are the twelve numbers of a page_results row, as parseMetrics reads them.
type metricNums [12]struct {
	Float64 float64
	Valid   bool
}

// into sets r's scores and vitals. One allocation per row holds every value the pointers point
// at.
func (nums *metricNums) into(r *store.PageResult) {
	vals := new(struct {
		ints   [4]int
		floats [8]float64
	})
	ip := func(i int) *int {
		if !nums[i].Valid {
			return nil
		}
		vals.ints[i] = int(nums[i].Float64)
		return &vals.ints[i]
	}
	fp := func(i int) *float64 {
		if !nums[4+i].Valid {
			return nil
		}
		vals.floats[i] = nums[4+i].Float64
		return &vals.floats[i]
	}
	r.Scores = store.PageScores{Performance: ip(0), SEO: ip(1), Accessibility: ip(2), BestPractices: ip(3)}
	r.CoreWebVitals = store.Vitals{LCP: fp(0), CLS: fp(1), INP: fp(2), FCP: fp(3), TTFB: fp(4), TBT: fp(5), SpeedIndex: fp(6), TTI: fp(7)}
}

// parseMetrics reads the text of a float8[] of len(nums) elements, such as {87,NULL,2500.5}.
func parseMetrics(b []byte, nums *metricNums) error {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return fmt.Errorf("metrics %q: not an array", b)
	}
	b = b[1 : len(b)-1]
	for i := range nums {
		end := bytes.IndexByte(b, ',')
		if end < 0 {
			end = len(b)
		}
		field := b[:end]
		if i == len(nums)-1 && end != len(b) || i < len(nums)-1 && end == len(b) {
			return fmt.Errorf("metrics: want %d elements", len(nums))
		}
		if string(field) == "NULL" {
			nums[i].Valid = false
		} else {
			v, err := strconv.ParseFloat(string(field), 64)
			if err != nil {
				return fmt.Errorf("metrics element %d: %w", i, err)
			}
			nums[i].Float64, nums[i].Valid = v, true
		}
		if end < len(b) {
			b = b[end+1:]
		}
	}
	return nil
}
