package postgres

import "context"

// SelectSiteName is the floor the endpoint benchmarks are measured against: one primary-key
// SELECT through database/sql on the store's pool, the least work any endpoint reading the
// database can do. It lives in a _test file of package postgres so the SQL stays here and only
// tests (package postgres_test) see it.
func (p *Store) SelectSiteName(ctx context.Context, siteID string) (string, error) {
	var name string
	err := p.db.QueryRowContext(ctx, `SELECT name FROM sites WHERE id = $1`, siteID).Scan(&name)
	return name, err
}
