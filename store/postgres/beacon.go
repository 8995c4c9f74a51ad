package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

// The beacon's store (migration 042): its keys, the histogram bins the ingest flushes into, and
// the reads that turn them into FieldPoints (store.BeaconPoints, the same Go the memory store
// runs, so both answer alike).

func (p *Store) BeaconKey(ctx context.Context, userID, siteID string) (string, error) {
	if !uuidOK(userID, siteID) {
		return "", store.NotFound("site")
	}
	var key string
	// The insert that loses a race, or finds the key made, does nothing; the select then
	// reads the key whoever made it.
	err := p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO beacon_keys (site_id, public_id)
			SELECT id, $3 FROM sites WHERE id = $1 AND `+writable("workspace_id", 2)+`
			ON CONFLICT (site_id) DO NOTHING`, siteID, userID, store.NewBeaconKey()); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT k.public_id FROM beacon_keys k JOIN sites s ON s.id = k.site_id
			WHERE k.site_id = $1 AND `+writable("s.workspace_id", 2), siteID, userID).Scan(&key)
	})
	return key, pgErr("site", err)
}

func (p *Store) BeaconSiteByKey(ctx context.Context, publicID string) (store.BeaconSite, error) {
	var s store.BeaconSite
	if !store.ValidBeaconKey(publicID) {
		return s, store.NotFound("beacon key")
	}
	err := p.db.QueryRowContext(ctx, `SELECT s.id, s.workspace_id, s.domain FROM beacon_keys k JOIN sites s ON s.id = k.site_id
		WHERE k.public_id = $1`, publicID).Scan(&s.SiteID, &s.WorkspaceID, &s.Domain)
	return s, pgErr("beacon key", err)
}

// addBeaconsSQL writes a flush in one statement (atomic without a transaction, one round trip):
//
//   - bins: the counts; keys repeated in the batch are summed first (an upsert may touch a row
//     once), rows of sites deleted since are dropped, and the rows go in key order so that two
//     processes flushing at once wait for each other rather than deadlock.
//   - inter: the interaction counts. A (selector, event type) not yet kept for its site, day,
//     page and device is admitted while that group had fewer than $19 of the same part before
//     the statement (store.MaxBeaconInteractions): the slowest list (and the LCP and CLS
//     element lists) are bounded, whatever is sent.
//   - days: the beacons seen per site and day, added to beacon_days; the statement answers each
//     day's total after the add, every process's flushes included: the count the daily cap
//     samples on (store.BeaconSeen).
const addBeaconsSQL = `WITH bins AS (
	INSERT INTO beacon_bins AS b (site_id, day, device, metric, path, bin, count, kept)
	SELECT t.site_id, t.day, t.device, t.metric, t.path, t.bin, sum(t.count), sum(t.kept)
	FROM unnest($1::uuid[], $2::date[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::float8[], $8::bigint[])
		AS t(site_id, day, device, metric, path, bin, count, kept)
	WHERE EXISTS (SELECT 1 FROM sites s WHERE s.id = t.site_id)
	GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY t.site_id, t.path, t.day, t.device, t.metric, t.bin
	ON CONFLICT (site_id, path, day, device, metric, bin) DO UPDATE SET count = b.count + EXCLUDED.count, kept = b.kept + EXCLUDED.kept),
t AS (
	SELECT t.site_id, t.day, t.path, t.device, t.selector, t.event_type, t.part, t.bin, sum(t.count) AS count, max(t.seen) AS seen
	FROM unnest($9::uuid[], $10::date[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::smallint[], $17::float8[], $18::timestamptz[])
		AS t(site_id, day, path, device, selector, event_type, part, bin, count, seen)
	WHERE EXISTS (SELECT 1 FROM sites s WHERE s.id = t.site_id)
	GROUP BY 1, 2, 3, 4, 5, 6, 7, 8),
inter AS (
	INSERT INTO beacon_interactions AS i (site_id, day, path, device, selector, event_type, part, bin, count, seen)
	SELECT t.site_id, t.day, t.path, t.device, t.selector, t.event_type, t.part, t.bin, t.count, t.seen FROM t
	WHERE EXISTS (SELECT 1 FROM beacon_interactions k WHERE k.site_id = t.site_id AND k.path = t.path AND k.day = t.day
			AND k.device = t.device AND k.selector = t.selector AND k.event_type = t.event_type)
		OR (SELECT count(DISTINCT (k.selector, k.event_type)) FROM beacon_interactions k
			WHERE k.site_id = t.site_id AND k.path = t.path AND k.day = t.day AND k.device = t.device AND k.part = t.part) < $19
	ORDER BY t.site_id, t.path, t.day, t.device, t.selector, t.event_type, t.part, t.bin
	ON CONFLICT (site_id, path, day, device, selector, event_type, part, bin)
		DO UPDATE SET count = i.count + EXCLUDED.count, seen = greatest(i.seen, EXCLUDED.seen)),
days AS (
	INSERT INTO beacon_days AS d (site_id, day, seen)
	SELECT t.site_id, t.day, sum(t.seen) FROM unnest($20::uuid[], $21::date[], $22::bigint[]) AS t(site_id, day, seen)
	WHERE EXISTS (SELECT 1 FROM sites s WHERE s.id = t.site_id)
	GROUP BY 1, 2 ORDER BY 1, 2
	ON CONFLICT (site_id, day) DO UPDATE SET seen = d.seen + EXCLUDED.seen
	RETURNING d.site_id, d.day, d.seen)
SELECT site_id, day::text, seen FROM days`

func (p *Store) AddBeacons(ctx context.Context, b store.BeaconBatch) ([]store.BeaconSeen, error) {
	var sites, days, devices, metrics, paths []string
	var bins, kept []int64
	var counts []float64
	for _, c := range b.Counts {
		if !uuidOK(c.SiteID) {
			continue
		}
		sites, days, devices, metrics, paths = append(sites, c.SiteID), append(days, dayText(c.Day)), append(devices, string(c.Device)),
			append(metrics, c.Metric), append(paths, c.Path)
		bins, counts, kept = append(bins, int64(c.Bin)), append(counts, c.Count), append(kept, c.Kept)
	}
	var isites, idays, ipaths, idevices, selectors, events, parts []string
	var ibins []int64
	var icounts []float64
	var seen []time.Time
	for _, c := range b.Interactions {
		if !uuidOK(c.SiteID) {
			continue
		}
		isites, idays, ipaths, idevices = append(isites, c.SiteID), append(idays, dayText(c.Day)), append(ipaths, c.Path), append(idevices, string(c.Device))
		selectors, events, parts = append(selectors, c.Selector), append(events, c.EventType), append(parts, c.Part)
		ibins, icounts, seen = append(ibins, int64(c.Bin)), append(icounts, c.Count), append(seen, store.Now(c.Seen))
	}
	var dsites, ddays []string
	var dseen []int64
	for _, d := range b.Seen {
		if uuidOK(d.SiteID) {
			dsites, ddays, dseen = append(dsites, d.SiteID), append(ddays, dayText(d.Day)), append(dseen, d.Seen)
		}
	}
	if len(sites) == 0 && len(isites) == 0 && len(dsites) == 0 {
		return nil, nil
	}
	totals, err := queryAll(ctx, p.db, "add beacons", func(row rowScanner) (store.BeaconSeen, error) {
		var d store.BeaconSeen
		var day string
		err := row.Scan(&d.SiteID, &day, &d.Seen)
		d.Day, _ = time.Parse(time.DateOnly, day)
		return d, err
	}, addBeaconsSQL, pq.Array(sites), pq.Array(days), pq.Array(devices), pq.Array(metrics), pq.Array(paths), pq.Array(bins), pq.Array(counts), pq.Array(kept),
		pq.Array(isites), pq.Array(idays), pq.Array(ipaths), pq.Array(idevices), pq.Array(selectors), pq.Array(events), pq.Array(parts),
		pq.Array(ibins), pq.Array(icounts), pq.Array(seen), store.MaxBeaconInteractions,
		pq.Array(dsites), pq.Array(ddays), pq.Array(dseen))
	return totals, err
}

func dayText(t time.Time) string { return store.BeaconDay(t).Format(time.DateOnly) }

// dayBounds turns a query's From and To into the days they hold: From <= day start < To.
// Empty strings are unbounded.
func dayBounds(q store.FieldQuery) (from, to sql.NullString) {
	ceil := func(t time.Time) string {
		d := store.BeaconDay(t)
		if d.Before(t) {
			d = d.AddDate(0, 0, 1)
		}
		return d.Format(time.DateOnly)
	}
	if !q.From.IsZero() {
		from = sql.NullString{String: ceil(q.From), Valid: true}
	}
	if !q.To.IsZero() {
		to = sql.NullString{String: ceil(q.To), Valid: true}
	}
	return from, to
}

// beaconOrigin is the origin of a site userID may read ("" is the system).
func (p *Store) beaconOrigin(ctx context.Context, userID, siteID string) (string, error) {
	if !uuidOK(siteID) || (userID != "" && !uuidOK(userID)) {
		return "", store.NotFound("site")
	}
	var domain string
	var err error
	if userID == "" {
		err = p.db.QueryRowContext(ctx, `SELECT domain FROM sites WHERE id = $1`, siteID).Scan(&domain)
	} else {
		err = p.db.QueryRowContext(ctx, `SELECT domain FROM sites WHERE id = $1 AND `+readable("workspace_id", 2), siteID, userID).Scan(&domain)
	}
	if err != nil {
		return "", pgErr("site", err)
	}
	return store.SiteOrigin(domain), nil
}

// beaconBins reads summed bins of one site and path; nav true reads the page views, false the
// field metrics.
func (p *Store) beaconBins(ctx context.Context, siteID, path string, q store.FieldQuery, nav bool) ([]store.BeaconCount, error) {
	from, to := dayBounds(q)
	return queryAll(ctx, p.db, "beacon series", func(row rowScanner) (store.BeaconCount, error) {
		var c store.BeaconCount
		var day string
		err := row.Scan(&day, &c.Device, &c.Metric, &c.Bin, &c.Count, &c.Kept)
		c.Day, _ = time.Parse(time.DateOnly, day)
		c.Path = path
		return c, err
	}, `SELECT day::text, device, metric, bin, count, kept FROM beacon_bins
		WHERE site_id = $1 AND path = $2 AND ($3 = '' OR device = $3) AND ((metric = 'nav') = $7) AND ($4 = '' OR metric = $4)
			AND ($5::date IS NULL OR day >= $5::date) AND ($6::date IS NULL OR day < $6::date)`,
		siteID, path, string(q.Device), q.Metric, from, to, nav)
}

func (p *Store) beaconSeries(ctx context.Context, userID, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	origin, err := p.beaconOrigin(ctx, userID, siteID)
	if err != nil {
		return nil, err
	}
	path, ok := store.BeaconPath(origin, q.Page)
	if !ok {
		return []store.FieldPoint{}, nil
	}
	rows, err := p.beaconBins(ctx, siteID, path, q, false)
	if err != nil {
		return nil, err
	}
	return store.BeaconPoints(origin, rows), nil
}

func (p *Store) BeaconSeries(ctx context.Context, userID, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	if userID == "" {
		return nil, store.NotFound("site")
	}
	return p.beaconSeries(ctx, userID, siteID, q)
}

func (p *Store) BeaconSeriesOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	return p.beaconSeries(ctx, "", siteID, q)
}

func (p *Store) BeaconViewsOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.BeaconViews, error) {
	origin, err := p.beaconOrigin(ctx, "", siteID)
	if err != nil {
		return nil, err
	}
	path, ok := store.BeaconPath(origin, q.Page)
	if !ok {
		return []store.BeaconViews{}, nil
	}
	q.Metric = ""
	rows, err := p.beaconBins(ctx, siteID, path, q, true)
	if err != nil {
		return nil, err
	}
	return store.BeaconViewsFrom(origin, rows), nil
}

func (p *Store) slowInteractions(ctx context.Context, userID, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error) {
	origin, rows, err := p.interRows(ctx, userID, siteID, q, []string{"inp", "input", "processing", "presentation"})
	if err != nil || origin == "" {
		return []store.Interaction{}, err
	}
	return store.BeaconSlowest(origin, rows, limit), nil
}

func (p *Store) BeaconElementsOf(ctx context.Context, siteID string, q store.FieldQuery, limit int) ([]store.BeaconElement, error) {
	origin, rows, err := p.interRows(ctx, "", siteID, q, []string{"lcp", "cls"})
	if err != nil || origin == "" {
		return []store.BeaconElement{}, err
	}
	return store.BeaconElementsFrom(origin, rows, limit), nil
}

// interRows reads a site's interaction rows of the given parts within q; origin "" when q's
// page is not the site's.
func (p *Store) interRows(ctx context.Context, userID, siteID string, q store.FieldQuery, parts []string) (string, []store.BeaconInteractionCount, error) {
	origin, err := p.beaconOrigin(ctx, userID, siteID)
	if err != nil {
		return "", nil, err
	}
	path, ok := store.BeaconPath(origin, q.Page)
	if !ok {
		return "", nil, nil
	}
	from, to := dayBounds(q)
	rows, err := queryAll(ctx, p.db, "beacon interactions", func(row rowScanner) (store.BeaconInteractionCount, error) {
		var c store.BeaconInteractionCount
		err := row.Scan(&c.Path, &c.Device, &c.Selector, &c.EventType, &c.Part, &c.Bin, &c.Count, &c.Seen)
		return c, err
	}, `SELECT path, device, selector, event_type, part, bin, count, seen FROM beacon_interactions
		WHERE site_id = $1 AND ($2 = '' OR path = $2) AND ($3 = '' OR device = $3)
			AND ($4::date IS NULL OR day >= $4::date) AND ($5::date IS NULL OR day < $5::date) AND part = ANY($6)`,
		siteID, path, string(q.Device), from, to, pq.Array(parts))
	return origin, rows, err
}

func (p *Store) SlowInteractions(ctx context.Context, userID, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error) {
	if userID == "" {
		return nil, store.NotFound("site")
	}
	return p.slowInteractions(ctx, userID, siteID, q, limit)
}

func (p *Store) SlowInteractionsOf(ctx context.Context, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error) {
	return p.slowInteractions(ctx, "", siteID, q, limit)
}

// pruneBeaconSQL deletes the beacon days of one table older than their workspace's retention.
const pruneBeaconSQL = `DELETE FROM %s b USING sites s JOIN workspaces w ON w.id = s.workspace_id
	WHERE b.site_id = s.id AND w.retention_days > 0 AND b.day < $1::date - w.retention_days`

func (p *Store) PruneBeacons(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for _, table := range []string{"beacon_bins", "beacon_interactions", "beacon_days"} {
		res, err := p.db.ExecContext(ctx, fmt.Sprintf(pruneBeaconSQL, table), dayText(now))
		if err != nil {
			return total, pgErr("prune beacons", err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}
