// Package postgres is the store.Store on PostgreSQL (lib/pq): its SQL, the embedded migrations,
// the job queue and its LISTEN/NOTIFY wake-ups.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock seeds the advisory lock key held while migrating, so processes starting together
// apply the schema once. The key is per schema (hashed with current_schema()): processes migrating
// different schemas of one database (every test makes its own) do not wait on each other.
const migrationLock = 0x5173_7075 // "Sipu"

// DefaultMaxConns is DATABASE_MAX_CONNS's default: the connections one process may open.
const DefaultMaxConns = 20

// Pool bounds a store's connections to Postgres, so N processes never exhaust its
// max_connections: N x MaxConns (+1 each for the job listener) must fit under it with headroom.
// A goroutine that finds every connection busy waits for one. The zero Pool is the default.
type Pool struct {
	// MaxConns is the most connections open at once (DATABASE_MAX_CONNS); 0 means
	// DefaultMaxConns. As many may stay idle: with fewer, a burst above the idle cap closes a
	// connection on every release and opens one (a new Postgres backend, its statements prepared
	// again) on the next request; budget-check at 64 connections fell from 17k to 10k req/s with
	// a 50 ms p99.
	MaxConns int
	// MaxIdleTime closes a connection unused this long; 0 means 5 minutes.
	MaxIdleTime time.Duration
	// MaxLifetime replaces a connection this old, so a failover, a pooler's rebalancing or a
	// server setting change reaches every process in time; 0 means 30 minutes.
	MaxLifetime time.Duration
	// ConnectPatience is how long opening a connection keeps trying while Postgres refuses it as
	// one too many (see waitingConnector); 0 means 10 seconds.
	ConnectPatience time.Duration
	// Wrap, when set, wraps the connector every connection is opened through: the tests that
	// count statements per request wrap it in a counting one (storetest.CountingPostgres).
	Wrap func(driver.Connector) driver.Connector
	// Direct is a DSN of the same database that reaches Postgres itself, not through a
	// connection pooler (DATABASE_DIRECT_URL): what needs a session uses it, the migrations
	// and the LISTEN of job wake-ups. "" means the store's own DSN.
	Direct string
}

// Store is the store.Store on PostgreSQL.
type Store struct {
	// Rules are the site rules every site write checks (SCAN_ALLOW_PRIVATE, MAX_PAGES_PER_SCAN);
	// set before use.
	Rules store.SiteRules

	db      *sql.DB
	direct  string      // the DSN of what needs a session: Pool.Direct, or the store's own
	notes   *notifier   // the process's one LISTEN connection, on direct (WakeOnJobs, FollowSiteVersions)
	budgets budgetCache // what budget checks read, per site (budget.go)
	// The sites' versions as last read, while the process follows them (versions.go).
	versions *versionFeed
	// The API keys found by APIKeyByHash and BudgetInputsByKey, for KeyCacheFor (keys.go).
	apiKeys    keyCache[store.APIKey]
	budgetKeys keyCache[budgetKey]
}

var _ store.Store = (*Store)(nil)

// Open connects to dsn through a pool bounded by pool, applies pending migrations (on
// pool.Direct when set) and returns the store.
//
// Every statement works through a transaction-mode pooler (PgBouncer, Supavisor, RDS Proxy): no
// named prepared statement (one lives on a server connection the pooler may give another client
// next), each statement with parameters sent as one unnamed Parse, Bind, Execute and Sync
// (lib/pq's binary_parameters, set here whatever dsn says: without it lib/pq parses in one round
// trip and binds in a second, which a pooler may send to another server connection), and no
// session state outside a transaction. Plans the hot path would otherwise make on every request
// are kept by Postgres in the PL/pgSQL functions of migration 026, per server connection.
func Open(ctx context.Context, dsn string, pool Pool) (*Store, error) {
	if pool.ConnectPatience <= 0 {
		pool.ConnectPatience = 10 * time.Second
	}
	connector, err := connect(dsn)
	if err != nil {
		return nil, err
	}
	versions := newVersionFeed()
	var c driver.Connector = waitingConnector{Connector: connector, patience: pool.ConnectPatience, writes: &versions.writes}
	if pool.Wrap != nil {
		c = pool.Wrap(c)
	}
	db := sql.OpenDB(c)
	if pool.MaxConns <= 0 {
		pool.MaxConns = DefaultMaxConns
	}
	if pool.MaxIdleTime <= 0 {
		pool.MaxIdleTime = 5 * time.Minute
	}
	if pool.MaxLifetime <= 0 {
		pool.MaxLifetime = 30 * time.Minute
	}
	db.SetMaxOpenConns(pool.MaxConns)
	db.SetMaxIdleConns(pool.MaxConns)
	db.SetConnMaxIdleTime(pool.MaxIdleTime)
	db.SetConnMaxLifetime(pool.MaxLifetime)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	p := &Store{db: db, direct: dsn, versions: versions, notes: &notifier{dsn: dsn}}
	if pool.Direct != "" && pool.Direct != dsn {
		p.direct, p.notes.dsn = pool.Direct, pool.Direct
		err = migrateOn(ctx, pool.Direct)
	} else {
		err = p.migrate(ctx)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return p, nil
}

// connect is the connector of dsn with binary_parameters on (see Open).
func connect(dsn string) (*pq.Connector, error) {
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	cfg.BinaryParameters = true
	return pq.NewConnectorConfig(cfg)
}

// migrateOn applies the migrations on a connection of its own to dsn (DATABASE_DIRECT_URL),
// closed when done.
func migrateOn(ctx context.Context, dsn string) error {
	c, err := connect(dsn)
	if err != nil {
		return err
	}
	m := &Store{db: sql.OpenDB(c)}
	defer m.db.Close()
	return m.migrate(ctx)
}

func (p *Store) Name() string { return "postgres" }

// Ping answers whether the store can read its schema: Postgres answers, and the database and
// schema the store keeps its data in are there (a dropped one is an outage, not a healthy store).
func (p *Store) Ping(ctx context.Context) error {
	_, err := p.db.ExecContext(ctx, `SELECT FROM schema_migrations LIMIT 1`)
	return err
}

// Stats is the connection pool's use: how many connections are open and in use, and how often
// and how long goroutines waited for one (a pool too small for the load waits a lot).
func (p *Store) Stats() sql.DBStats { return p.db.Stats() }
func (p *Store) Close() error       { return p.db.Close() }

// migrate applies the embedded migrations in order, each in its own transaction that holds
// the migration lock and checks again whether another process applied it meanwhile.
func (p *Store) migrate(ctx context.Context) error { return p.migrateTo(ctx, math.MaxInt) }

// OpenAt opens dsn with the migrations up to version upTo only, as an older SitePulse left it:
// loadkit seeds such a database to time the next migrations on it (Open applies them).
func OpenAt(ctx context.Context, dsn string, upTo int) (*Store, error) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	p := &Store{db: db, direct: dsn, versions: newVersionFeed(), notes: &notifier{dsn: dsn}}
	if err := p.migrateTo(ctx, upTo); err != nil {
		db.Close()
		return nil, err
	}
	return p, nil
}

// migrateTo is migrate stopping after version upTo: the migration tests build an older schema.
//
// The lock is a transaction's (pg_advisory_xact_lock), not a session's: a session lock taken
// through a transaction pooler stays on whichever server connection ran it, and its unlock
// may run on another, so the next process to start would wait for ever. Every transaction
// starts with it, so two processes starting at once apply each migration once, in order,
// whichever connection they reach Postgres through.
func (p *Store) migrateTo(ctx context.Context, upTo int) error {
	if err := p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(current_schema(), $1))`, migrationLock); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
		return err
	}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	seen := map[int]string{}
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		version, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migrate: %s has no version number", base)
		}
		// Two branches that each added the next number would otherwise have the second file
		// skipped as applied, silently.
		if other, ok := seen[version]; ok {
			return fmt.Errorf("migrate: %s and %s have the same version number", other, base)
		}
		seen[version] = base
		if version > upTo {
			break
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		if err := p.tx(ctx, func(tx *sql.Tx) error {
			var applied bool
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(current_schema(), $1))`, migrationLock); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&applied); err != nil || applied {
				return err
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version)
			return err
		}); err != nil {
			return fmt.Errorf("migrate %s: %w", base, err)
		}
	}
	return nil
}

// MigrationsApplied lists the applied migration versions (tests check the schema went in once).
func (p *Store) MigrationsApplied(ctx context.Context) ([]int, error) {
	return queryAll(ctx, p.db, "migrations", func(r rowScanner) (v int, err error) { return v, r.Scan(&v) },
		`SELECT version FROM schema_migrations ORDER BY version`)
}

// pgErr maps driver errors onto the store's sentinels.
func pgErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505":
			if pe.Constraint == "scans_in_flight" {
				return fmt.Errorf("%s: %w", what, store.ErrScanActive)
			}
			return fmt.Errorf("%s: %w", what, store.ErrConflict)
		case "23503": // foreign key: the parent row is gone
			return fmt.Errorf("%s: %w", what, store.ErrNotFound)
		case "22P02": // invalid text representation, e.g. a malformed uuid
			return fmt.Errorf("%s: %w", what, store.ErrNotFound)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// affected turns "no row changed" into err.
func affected(res sql.Result, err error, none error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return none
	}
	return nil
}

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(...any) error }

// querier is a *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// queryAll runs a query and scans every row with scan; an empty result is an empty, non-nil
// slice, as the memory store returns.
func queryAll[T any](ctx context.Context, q querier, what string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, pgErr(what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, pgErr(what, err)
		}
		out = append(out, v)
	}
	return out, pgErr(what, rows.Err())
}

// tx runs fn in a transaction.
func (p *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// uuidOK guards queries against ids that are not canonical (lower-case) uuids: Postgres would
// reject them with a type error, or match an upper-case spelling the memory store would not, and
// the caller means "no such row". API boundaries canonicalise ids with CanonicalID first.
func uuidOK(ids ...string) bool {
	for _, id := range ids {
		if !store.ValidUUID(id) || id != strings.ToLower(id) {
			return false
		}
	}
	return true
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return store.Now(*t)
}

func timePtr(nt sql.NullTime) *time.Time {
	if !nt.Valid {
		return nil
	}
	t := nt.Time.UTC()
	return &t
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
