package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
)

// OpenMigratedTo is OpenAt, for the tests that build a database as an older SitePulse left it
// and then let Open move it on.
func OpenMigratedTo(ctx context.Context, dsn string, upTo int) (*Store, error) {
	return OpenAt(ctx, dsn, upTo)
}

// FollowingVersions is whether the process answers site versions from what it holds: its
// listener is connected (versions.go).
func (p *Store) FollowingVersions() bool { return p.versions.live.Load() }

// DB is the store's pool, for raw SQL in tests.
func (p *Store) DB() *sql.DB { return p.db }

// DumpText is every row of every table of the store's schema as JSON text, one row a line: what
// a database dump would hold, for the tests that look for secrets in it.
func (p *Store) DumpText(ctx context.Context) (string, error) {
	tables, err := queryAll(ctx, p.db, "tables", func(r rowScanner) (name string, err error) { return name, r.Scan(&name) },
		`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, name := range tables {
		var rows string
		q := `SELECT coalesce(string_agg(to_jsonb(t)::text, E'\n'), '') FROM ` + pq.QuoteIdentifier(name) + ` t`
		if err := p.db.QueryRowContext(ctx, q).Scan(&rows); err != nil {
			return "", fmt.Errorf("dump %s: %w", name, err)
		}
		fmt.Fprintf(&out, "-- %s\n%s\n", name, rows)
	}
	return out.String(), nil
}

// SetWakeUpProbe sets how long WakeOnJobs waits for its test notification, until the test ends.
func SetWakeUpProbe(t interface{ Cleanup(func()) }, d time.Duration) {
	old := wakeUpProbe
	wakeUpProbe = d
	t.Cleanup(func() { wakeUpProbe = old })
}
