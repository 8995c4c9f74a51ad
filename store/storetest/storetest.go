// Package storetest opens stores for tests: the in-memory store, and Postgres in a schema of
// its own that is dropped when the test ends, so test runs never see each other's data. Its
// test files are the contract suite (store_test.go and the files beside it): the same
// behaviour checked against store/memory and store/postgres.
package storetest

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/postgres"

	_ "github.com/lib/pq"
)

// Connection budget: the suite passes on a server with 20 connections free (issue 24). A test's
// store opens at most MaxConns connections, a SitePulse process a system test starts at most
// ChildMaxConns (as DATABASE_MAX_CONNS), and at most schemaSlots Postgres tests of one test binary
// hold a schema at once (the others wait in SchemaDSN); with a job listener and a second store on
// one schema that stays under 20 per binary. Concurrency tests run their goroutines on these
// small pools: they wait for a connection, and still race each other inside Postgres.
const (
	MaxConns      = 4
	ChildMaxConns = 3
	schemaSlots   = 3
)

var slots = make(chan struct{}, schemaSlots)

// adminDB is the one connection a test binary creates and drops schemas on: opening one per
// schema churned two Postgres backends per test, and on a loaded machine backends that had not
// yet exited still counted against the connection limit.
var adminDB struct {
	once sync.Once
	db   *sql.DB
	err  error
}

func admin(dsn string) (*sql.DB, error) {
	adminDB.once.Do(func() {
		adminDB.db, adminDB.err = sql.Open("postgres", dsn)
		if adminDB.err == nil {
			adminDB.db.SetMaxOpenConns(1)
			adminDB.db.SetMaxIdleConns(1)
		}
	})
	return adminDB.db, adminDB.err
}

// Backend names a store implementation for t.Run.
type Backend struct {
	Name string
	Open func(t testing.TB) store.Store
}

// Backends returns the memory store and, when DATABASE_URL is set, Postgres. Under CI=true a
// missing DATABASE_URL fails the test instead of skipping Postgres.
func Backends(t testing.TB) []Backend {
	b := []Backend{{"memory", func(testing.TB) store.Store { return memory.New() }}}
	if os.Getenv("DATABASE_URL") != "" {
		b = append(b, Backend{"postgres", func(t testing.TB) store.Store { return Postgres(t) }})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but DATABASE_URL is not set: the Postgres tests would not run")
	}
	return b
}

// WithRules sets the site rules of a store this package opened, as main does from the
// configuration: tests whose sites are servers on 127.0.0.1 allow private addresses, as
// SCAN_ALLOW_PRIVATE would.
func WithRules(st store.Store, r store.SiteRules) store.Store {
	switch s := st.(type) {
	case *memory.Store:
		s.Rules = r
	case *postgres.Store:
		s.Rules = r
	}
	return st
}

// Postgres returns a migrated Postgres store in a fresh schema; it skips the test when
// DATABASE_URL is unset, and fails it under CI=true.
func Postgres(t testing.TB) *postgres.Store {
	t.Helper()
	p, _ := PostgresDSN(t)
	return p
}

// PostgresDSN is Postgres and the DSN of its schema, for a test that opens more connections to
// it: a listener, a proxy, a second process.
func PostgresDSN(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	dsn := SchemaDSN(t)
	return Open(t, dsn), dsn
}

// Open opens and migrates a Postgres store on dsn with a pool of MaxConns connections, closed in
// t.Cleanup (before the schema is dropped). A connection refused as one too many is tried again
// for up to 30 s: the backends of the tests that just closed their stores may not have exited.
func Open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	p, err := postgres.Open(context.Background(), dsn, postgres.Pool{MaxConns: MaxConns, ConnectPatience: 30 * time.Second, Direct: DirectDSN(dsn)})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// SchemaDSN creates an empty schema and returns DATABASE_URL with its search_path set to it.
// The schema is dropped in t.Cleanup.
//
// When DATABASE_DIRECT_URL is set too, DATABASE_URL is taken for a transaction pooler (issue
// 36; .ci/run runs the suite so through PgBouncer): a pooler refuses a search_path in the
// connection's start-up packet (PgBouncer 1.18) or drops it, so the schema gets a role of the same
// name whose default search_path is the schema, and the DSN logs in as that role. DirectDSN
// gives the same role's DSN on DATABASE_DIRECT_URL.
func SchemaDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv("DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but DATABASE_URL is not set: this Postgres test must not skip")
		}
		t.Skip("DATABASE_URL not set; skipping the Postgres test")
	}
	direct := os.Getenv("DATABASE_DIRECT_URL")
	slots <- struct{}{}
	t.Cleanup(func() { <-slots }) // registered first, so it runs after the schema is dropped
	db, err := admin(cmp.Or(direct, base))
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	schema := "t_" + strings.ReplaceAll(store.NewID(), "-", "")[:20]
	if direct == "" || direct == base {
		if _, err := db.Exec(`CREATE SCHEMA ` + schema); err != nil {
			t.Fatalf("create schema: %v", err)
		}
		t.Cleanup(func() {
			if _, err := db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
				t.Logf("drop schema %s: %v", schema, err)
			}
		})
		return withSearchPath(t, base, schema)
	}
	for _, q := range []string{`CREATE ROLE ` + schema + ` LOGIN`, `CREATE SCHEMA ` + schema + ` AUTHORIZATION ` + schema,
		`ALTER ROLE ` + schema + ` SET search_path = ` + schema} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		// The pooler keeps the role's server connections open; they go first, so the role can.
		for _, q := range []string{`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '` + schema + `'`,
			`DROP SCHEMA ` + schema + ` CASCADE`, `DROP ROLE ` + schema} {
			if _, err := db.Exec(q); err != nil {
				t.Logf("%s: %v", q, err)
			}
		}
	})
	pooled := withUser(t, base, schema)
	directs.Store(pooled, withUser(t, direct, schema))
	return pooled
}

// directs maps a DSN SchemaDSN made for a pooler to the same role's direct one.
var directs sync.Map

// DirectDSN is the DSN on DATABASE_DIRECT_URL of the schema of dsn, a DSN SchemaDSN returned:
// what a process given dsn as DATABASE_URL takes as DATABASE_DIRECT_URL. Without a pooler it is
// dsn itself.
func DirectDSN(dsn string) string {
	if d, ok := directs.Load(dsn); ok {
		return d.(string)
	}
	return dsn
}

// withUser is dsn logging in as user, with no password.
func withUser(t testing.TB, dsn, user string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("DATABASE_URL: %v", err)
		}
		u.User = url.User(user)
		return u.String()
	}
	return fmt.Sprintf("%s user=%s password=''", dsn, user)
}

func withSearchPath(t testing.TB, dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("DATABASE_URL: %v", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return fmt.Sprintf("%s search_path=%s", dsn, schema)
}

// DatabaseDSN creates a database of its own and returns its DSN and drop, which drops it at
// once with its connections, as an operator's DROP DATABASE ... WITH (FORCE) under a running
// server does (it is dropped in t.Cleanup too). The DSN is on DATABASE_DIRECT_URL when set: a
// pooler serves only the databases it was told of.
func DatabaseDSN(t testing.TB) (dsn string, drop func()) {
	t.Helper()
	base := cmp.Or(os.Getenv("DATABASE_DIRECT_URL"), os.Getenv("DATABASE_URL"))
	if base == "" {
		SchemaDSN(t) // skips, or fails under CI=true
	}
	slots <- struct{}{}
	t.Cleanup(func() { <-slots })
	db, err := admin(base)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	name := "sitepulse_t_" + strings.ReplaceAll(store.NewID(), "-", "")[:16]
	if _, err := db.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	drop = func() {
		if _, err := db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	}
	t.Cleanup(drop)
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		t.Fatalf("DATABASE_URL is not a URL: %v", err)
	}
	u.Path = "/" + name
	return u.String(), drop
}

// DropSchema drops the schema of dsn (a DSN SchemaDSN returned) with everything in it, under
// whatever has it open: the store's next statements find no relation.
func DropSchema(t testing.TB, dsn string) {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DO $$ BEGIN EXECUTE 'DROP SCHEMA ' || quote_ident(current_schema()) || ' CASCADE'; END $$`); err != nil {
		t.Fatalf("drop schema: %v", err)
	}
}
