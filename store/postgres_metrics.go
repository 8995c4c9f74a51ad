package store

import (
	"context"
	"database/sql"
)

// metricsCols reads scores and vitals as numbers from the generated columns of migration 005,
// so a 200-page scan neither detoasts nor JSON-decodes its full results.
const metricsCols = `r.page_path, r.page_url, r.strategy,
	(r.scores->>'performance')::int, (r.scores->>'seo')::int, (r.scores->>'accessibility')::int, (r.scores->>'bestPractices')::int,
	(r.vitals->>'lcp')::float8, (r.vitals->>'cls')::float8, (r.vitals->>'inp')::float8, (r.vitals->>'fcp')::float8,
	(r.vitals->>'ttfb')::float8, (r.vitals->>'tbt')::float8, (r.vitals->>'speedIndex')::float8, (r.vitals->>'tti')::float8`

func (p *Postgres) PageMetrics(ctx context.Context, userID, scanID string) ([]PageResult, error) {
	if !uuidOK(userID, scanID) {
		return nil, notFound("scan")
	}
	rows, err := p.db.QueryContext(ctx, `SELECT `+metricsCols+`
		FROM page_results r JOIN scans c ON c.id = r.scan_id JOIN sites s ON s.id = c.site_id
		WHERE r.scan_id = $1 AND s.user_id = $2 AND r.result IS NOT NULL
		ORDER BY r.page_path, r.strategy`, scanID, userID)
	if err != nil {
		return nil, pgErr("page metrics", err)
	}
	defer rows.Close()
	out := []PageResult{}
	var ints [4]sql.NullInt64
	var floats [8]sql.NullFloat64
	for rows.Next() {
		r := PageResult{ScanID: scanID}
		if err := rows.Scan(&r.PagePath, &r.PageURL, &r.Strategy, &ints[0], &ints[1], &ints[2], &ints[3],
			&floats[0], &floats[1], &floats[2], &floats[3], &floats[4], &floats[5], &floats[6], &floats[7]); err != nil {
			return nil, pgErr("page metrics", err)
		}
		// One allocation per row holds every value the pointers point at.
		vals := new(struct {
			ints   [4]int
			floats [8]float64
		})
		ip := func(i int) *int {
			if !ints[i].Valid {
				return nil
			}
			vals.ints[i] = int(ints[i].Int64)
			return &vals.ints[i]
		}
		fp := func(i int) *float64 {
			if !floats[i].Valid {
				return nil
			}
			vals.floats[i] = floats[i].Float64
			return &vals.floats[i]
		}
		r.Scores = PageScores{Performance: ip(0), SEO: ip(1), Accessibility: ip(2), BestPractices: ip(3)}
		r.CoreWebVitals = Vitals{LCP: fp(0), CLS: fp(1), INP: fp(2), FCP: fp(3), TTFB: fp(4), TBT: fp(5), SpeedIndex: fp(6), TTI: fp(7)}
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
