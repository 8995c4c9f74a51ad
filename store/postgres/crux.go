package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

// sitesDueSQL is a per-site schedule's statement: it claims up to $2 sites whose next time
// (column next) is due at $1 and that match where (skipping rows another process holds), moves
// their next time to $3 and enqueues a job of kind $4 each, in one statement; it answers how
// many jobs it made. The weekly CrUX refresh and the daily field check use it.
func sitesDueSQL(next, where string) string {
	return `WITH due AS (
	SELECT id FROM sites s WHERE (` + next + ` IS NULL OR ` + next + ` <= $1) AND ` + where + `
	ORDER BY ` + next + ` NULLS FIRST, id LIMIT $2 FOR UPDATE SKIP LOCKED),
moved AS (
	UPDATE sites s SET ` + next + ` = $3
	FROM due d WHERE s.id = d.id RETURNING s.id, s.workspace_id),
made AS (
	INSERT INTO jobs (kind, args, state, max_attempts, run_at, created_at, workspace_id)
	SELECT $4, jsonb_build_object('siteId', m.id, 'workspaceId', m.workspace_id), 'available', $5, $1, $1, m.workspace_id
	FROM moved m RETURNING id),
notified AS (SELECT pg_notify('` + NotifyChannel + `', $4) FROM (SELECT 1 FROM made LIMIT 1) j)
SELECT (SELECT count(*) FROM made) WHERE (SELECT count(*) FROM notified) >= 0`
}

var (
	enqueueDueCruxSQL = sitesDueSQL("crux_next_at", "true")
	// A site is due for the field check with beacon days since $6 or CrUX history.
	enqueueDueFieldSQL = sitesDueSQL("field_next_at", `(EXISTS (SELECT 1 FROM beacon_days b WHERE b.site_id = s.id AND b.day >= $6::date)
		OR EXISTS (SELECT 1 FROM beacon_bins b WHERE b.site_id = s.id AND b.day >= $6::date)
		OR EXISTS (SELECT 1 FROM crux_points c WHERE c.site_id = s.id))`)
)

func (p *Store) EnqueueDueCrux(ctx context.Context, now time.Time, every time.Duration, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := p.db.QueryRowContext(ctx, enqueueDueCruxSQL, store.Now(now), limit, store.Now(now.Add(every)),
		store.KindCrux, store.MaxAttemptsOf(store.CruxJob{})).Scan(&n)
	return n, pgErr("enqueue crux refreshes", err)
}

func (p *Store) EnqueueDueField(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := p.db.QueryRowContext(ctx, enqueueDueFieldSQL, store.Now(now), limit, store.Now(store.NextFieldCheck(now)),
		store.KindField, store.MaxAttemptsOf(store.FieldJob{}), dayText(now.AddDate(0, 0, -store.FieldCheckDays))).Scan(&n)
	return n, pgErr("enqueue field checks", err)
}

func (p *Store) CruxTarget(ctx context.Context, siteID string) (store.CruxTarget, error) {
	if !uuidOK(siteID) {
		return store.CruxTarget{}, store.NotFound("site")
	}
	s, err := scanSite(p.db.QueryRowContext(ctx, `SELECT `+siteCols+` FROM sites WHERE id = $1`, siteID))
	if err != nil {
		return store.CruxTarget{}, pgErr("crux target", err)
	}
	pages, err := queryAll(ctx, p.db, "crux target pages", func(row rowScanner) (string, error) {
		var u string
		return u, row.Scan(&u)
	}, `SELECT DISTINCT r.page_url FROM page_results r WHERE r.scan_id = (
		SELECT c.id FROM scans c WHERE c.site_id = $1 AND c.status = 'complete'
		ORDER BY c.completed_at DESC, c.id DESC LIMIT 1) AND r.result IS NOT NULL AND r.page_url <> ''
	ORDER BY 1`, siteID)
	return store.CruxTarget{Site: s, Pages: pages}, err
}

// cruxBins is a histogram as crux_points keeps it: [start, end, density] per bin.
type cruxBins [][3]float64

func encodeBins(h []store.FieldBin) any {
	if len(h) == 0 {
		return nil
	}
	bins := make(cruxBins, len(h))
	for i, b := range h {
		bins[i] = [3]float64{b.Start, b.End, b.Count}
	}
	raw, _ := json.Marshal(bins) // finite numbers: the client dropped NaN densities
	return string(raw)
}

func decodeBins(raw []byte) ([]store.FieldBin, error) {
	if raw == nil {
		return nil, nil
	}
	var bins cruxBins
	if err := json.Unmarshal(raw, &bins); err != nil {
		return nil, fmt.Errorf("crux histogram: %w", err)
	}
	out := make([]store.FieldBin, len(bins))
	for i, b := range bins {
		out[i] = store.FieldBin{Start: b[0], End: b[1], Count: b[2]}
	}
	return out, nil
}

func (p *Store) SaveCrux(ctx context.Context, siteID string, rec store.CruxRecord, now time.Time) error {
	if !uuidOK(siteID) || !rec.Device.Valid() {
		return store.NotFound("site")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		// The site's row is locked first, so a site deleted meanwhile stores nothing.
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sites WHERE id = $1 FOR KEY SHARE`, siteID).Scan(&one); err != nil {
			return pgErr("save crux", err)
		}
		periods := map[time.Time]bool{}
		if len(rec.Points) > 0 {
			pages, devices, metrics := make(pq.StringArray, 0, len(rec.Points)), make(pq.StringArray, 0, len(rec.Points)), make(pq.StringArray, 0, len(rec.Points))
			starts, ends := make([]string, 0, len(rec.Points)), make([]string, 0, len(rec.Points))
			p75s := make([]sql.NullFloat64, 0, len(rec.Points))
			hists := make([]sql.NullString, 0, len(rec.Points))
			for _, pt := range rec.Points {
				pages, devices, metrics = append(pages, rec.Page), append(devices, string(rec.Device)), append(metrics, pt.Metric)
				starts = append(starts, store.Now(pt.Start).Format(time.RFC3339Nano))
				ends = append(ends, store.Now(pt.End).Format(time.RFC3339Nano))
				var v sql.NullFloat64
				if pt.P75 != nil {
					v = sql.NullFloat64{Float64: *pt.P75, Valid: true}
				}
				p75s = append(p75s, v)
				var h sql.NullString
				if enc, ok := encodeBins(pt.Histogram).(string); ok {
					h = sql.NullString{String: enc, Valid: true}
				}
				hists = append(hists, h)
				periods[store.Now(pt.Start)] = true
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO crux_points (site_id, page, device, metric, period_start, period_end, p75, histogram)
				SELECT $1, u.page, u.device, u.metric, u.ps::timestamptz, u.pe::timestamptz, u.p75, u.h::jsonb
				FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::text[]) AS u(page, device, metric, ps, pe, p75, h)
				ON CONFLICT (site_id, page, device, metric, period_start) DO UPDATE
				SET period_end = excluded.period_end, p75 = excluded.p75, histogram = excluded.histogram`,
				siteID, pages, devices, metrics, pq.StringArray(starts), pq.StringArray(ends), pq.Array(p75s), pq.Array(hists))
			if err != nil {
				return pgErr("save crux points", err)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO crux_fetches (site_id, page, device, fetched_at, found, periods)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (site_id, page, device) DO UPDATE
			SET fetched_at = excluded.fetched_at, found = excluded.found, periods = excluded.periods`,
			siteID, rec.Page, string(rec.Device), store.Now(now), rec.Found, len(periods))
		return pgErr("save crux fetch", err)
	})
}

func (p *Store) CruxFetches(ctx context.Context, userID, siteID string) ([]store.CruxFetch, error) {
	if !uuidOK(userID, siteID) {
		return nil, store.NotFound("site")
	}
	if err := p.readableSite(ctx, userID, siteID); err != nil {
		return nil, err
	}
	return p.CruxFetchesOf(ctx, siteID)
}

func (p *Store) CruxFetchesOf(ctx context.Context, siteID string) ([]store.CruxFetch, error) {
	if !uuidOK(siteID) {
		return []store.CruxFetch{}, nil
	}
	return queryAll(ctx, p.db, "crux fetches", func(row rowScanner) (store.CruxFetch, error) {
		var f store.CruxFetch
		var device string
		err := row.Scan(&f.Page, &device, &f.FetchedAt, &f.Found, &f.Periods)
		f.Device, f.FetchedAt = store.FieldDevice(device), store.Now(f.FetchedAt)
		return f, err
	}, `SELECT page, device, fetched_at, found, periods FROM crux_fetches WHERE site_id = $1
	ORDER BY page COLLATE "C", device COLLATE "C" DESC`, siteID)
}

// readableSite answers ErrNotFound unless the site is of one of the user's workspaces.
func (p *Store) readableSite(ctx context.Context, userID, siteID string) error {
	var one int
	err := p.db.QueryRowContext(ctx, `SELECT 1 FROM sites WHERE id = $1 AND `+readable("workspace_id", 2), siteID, userID).Scan(&one)
	return pgErr("site", err)
}

func (p *Store) CruxSeries(ctx context.Context, userID, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	if !uuidOK(userID, siteID) {
		return nil, store.NotFound("site")
	}
	if err := p.readableSite(ctx, userID, siteID); err != nil {
		return nil, err
	}
	return p.CruxSeriesOf(ctx, siteID, q)
}

func (p *Store) CruxSeriesOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	if !uuidOK(siteID) {
		return []store.FieldPoint{}, nil
	}
	var from, to any
	if !q.From.IsZero() {
		from = store.Now(q.From)
	}
	if !q.To.IsZero() {
		to = store.Now(q.To)
	}
	return queryAll(ctx, p.db, "crux series", func(row rowScanner) (store.FieldPoint, error) {
		pt := store.FieldPoint{Source: store.FieldCrUX}
		var device string
		var p75 sql.NullFloat64
		var hist []byte
		if err := row.Scan(&pt.Page, &device, &pt.Metric, &pt.Start, &pt.End, &p75, &hist); err != nil {
			return pt, err
		}
		pt.Device, pt.Start, pt.End = store.FieldDevice(device), store.Now(pt.Start), store.Now(pt.End)
		if p75.Valid {
			v := p75.Float64
			pt.P75 = &v
		}
		var err error
		pt.Histogram, err = decodeBins(hist)
		return pt, err
	}, `SELECT page, device, metric, period_start, period_end, p75, histogram FROM crux_points
	WHERE site_id = $1 AND page = $2 AND ($3 = '' OR device = $3) AND ($4 = '' OR metric = $4)
		AND ($5::timestamptz IS NULL OR period_start >= $5) AND ($6::timestamptz IS NULL OR period_start < $6)
	ORDER BY period_start, device COLLATE "C" DESC, metric COLLATE "C"`,
		siteID, q.Page, string(q.Device), q.Metric, from, to)
}

// pruneCruxSQL deletes up to $2 CrUX points whose period ended more than their workspace's
// retention before $1.
const pruneCruxSQL = `WITH victims AS (
	SELECT c.site_id, c.page, c.device, c.metric, c.period_start FROM crux_points c
	JOIN sites s ON s.id = c.site_id JOIN workspaces w ON w.id = s.workspace_id
	WHERE w.retention_days > 0 AND c.period_end < $1::timestamptz - make_interval(days => w.retention_days)
	LIMIT $2)
DELETE FROM crux_points c USING victims v
WHERE c.site_id = v.site_id AND c.page = v.page AND c.device = v.device AND c.metric = v.metric AND c.period_start = v.period_start`

func (p *Store) PruneCrux(ctx context.Context, now time.Time, limit int) (int, error) {
	res, err := p.db.ExecContext(ctx, pruneCruxSQL, store.Now(now), limit)
	if err != nil {
		return 0, pgErr("prune crux", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
