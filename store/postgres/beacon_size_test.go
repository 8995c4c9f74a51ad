package postgres

import "context"

// BeaconBytes measures what a site's beacon rows take, for the storage figures of
// .ci/README.md: the rows and their bytes (pg_column_size of each row), and the two tables'
// whole size with their indexes (pg_total_relation_size; only meaningful in a schema of the
// test's own).
func (p *Store) BeaconBytes(ctx context.Context, siteID string) (rows, rowBytes, tableBytes int64, err error) {
	err = p.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM beacon_bins WHERE site_id = $1) + (SELECT count(*) FROM beacon_interactions WHERE site_id = $1),
		coalesce((SELECT sum(pg_column_size(b.*)) FROM beacon_bins b WHERE site_id = $1), 0)
			+ coalesce((SELECT sum(pg_column_size(i.*)) FROM beacon_interactions i WHERE site_id = $1), 0),
		pg_total_relation_size('beacon_bins') + pg_total_relation_size('beacon_interactions')`, siteID).Scan(&rows, &rowBytes, &tableBytes)
	return rows, rowBytes, tableBytes, err
}
