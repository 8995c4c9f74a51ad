package postgres

import (
	"context"
	"database/sql"
	"fmt"
)

// OpenMigratedTo opens dsn with the migrations up to version upTo only, for the tests that build
// a database as an older SitePulse left it and then let Open move it on.
func OpenMigratedTo(ctx context.Context, dsn string, upTo int) (*Store, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	p := &Store{db: db, dsn: dsn}
	if err := p.migrateTo(ctx, upTo); err != nil {
		db.Close()
		return nil, err
	}
	return p, nil
}

// DB is the store's pool, for raw SQL in tests.
func (p *Store) DB() *sql.DB { return p.db }
