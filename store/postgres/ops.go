package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"sitepulse/store"
)

// latestMigration is the highest migration version embedded in this program.
var latestMigration = func() int {
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	latest := 0
	for _, name := range names {
		v, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(name, "migrations/"), "_", 2)[0])
		latest = max(latest, v)
	}
	return latest
}()

// Ready answers, in one round trip, whether Postgres answers and the schema has this
// program's latest migration: a database restored from an older dump, or a schema reset under a
// running process, makes it not ready rather than failing requests one by one.
func (p *Store) Ready(ctx context.Context) error {
	var version int
	if err := p.db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	if version < latestMigration {
		return fmt.Errorf("ready: schema at migration %d, this program needs %d", version, latestMigration)
	}
	return nil
}

// JobFigures reads the live jobs through the partial indexes of available and running jobs.
func (p *Store) JobFigures(ctx context.Context, now time.Time) ([]store.JobFigure, error) {
	return queryAll(ctx, p.db, "job figures", func(r rowScanner) (f store.JobFigure, err error) {
		var oldest sql.NullTime
		err = r.Scan(&f.Kind, &f.State, &f.Jobs, &oldest)
		if oldest.Valid {
			f.OldestRunnable = oldest.Time.UTC()
		}
		return f, err
	}, `SELECT kind, state, count(*), min(run_at) FILTER (WHERE state = 'available' AND run_at <= $1)
		FROM jobs WHERE state IN ('available', 'running') GROUP BY kind, state ORDER BY kind, state`, now)
}
