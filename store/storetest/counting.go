package storetest

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store/postgres"
)

// Statements counts the SQL statements a Postgres store sends: every query and exec, on the
// connection or through a prepared statement, and every BEGIN, COMMIT and ROLLBACK, each a round
// trip to the database. Preparing a statement is not counted: it happens once per connection.
type Statements struct {
	mu   sync.Mutex
	sent []string
}

// Reset forgets what was counted so far.
func (c *Statements) Reset() {
	c.mu.Lock()
	c.sent = nil
	c.mu.Unlock()
}

// Sent returns the statements counted since the last Reset, each on one line.
func (c *Statements) Sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sent...)
}

func (c *Statements) add(query string) {
	c.mu.Lock()
	c.sent = append(c.sent, strings.Join(strings.Fields(query), " "))
	c.mu.Unlock()
}

// CountingPostgres is Postgres (in a schema of its own) opened through a connector that counts
// the statements it sends.
func CountingPostgres(t testing.TB) (*postgres.Store, *Statements) {
	t.Helper()
	return CountingOpen(t, SchemaDSN(t))
}

// CountingOpen is Open (a replica on dsn) through a connector that counts the statements it
// sends.
func CountingOpen(t testing.TB, dsn string) (*postgres.Store, *Statements) {
	t.Helper()
	c := &Statements{}
	wrap := func(inner driver.Connector) driver.Connector { return countingConnector{inner: inner, c: c} }
	p, err := postgres.Open(context.Background(), dsn, postgres.Pool{MaxConns: MaxConns, ConnectPatience: 30 * time.Second, Wrap: wrap, Direct: DirectDSN(dsn)})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	c.Reset() // the migrations
	return p, c
}

type countingConnector struct {
	inner driver.Connector
	c     *Statements
}

func (cc countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	inner, err := cc.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{inner: inner, c: cc.c}, nil
}

func (cc countingConnector) Driver() driver.Driver { return cc.inner.Driver() }

// innerConn is what lib/pq's connection implements.
type innerConn = postgres.DriverConn

type countingConn struct {
	inner driver.Conn
	c     *Statements
}

func (cc *countingConn) pq() innerConn { return cc.inner.(innerConn) }

func (cc *countingConn) Prepare(query string) (driver.Stmt, error) {
	return cc.PrepareContext(context.Background(), query)
}

func (cc *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := cc.pq().PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &countingStmt{inner: st, query: query, c: cc.c}, nil
}

func (cc *countingConn) Close() error { return cc.inner.Close() }

func (cc *countingConn) Begin() (driver.Tx, error) {
	return cc.BeginTx(context.Background(), driver.TxOptions{})
}

func (cc *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	cc.c.add("BEGIN")
	tx, err := cc.pq().BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{inner: tx, c: cc.c}, nil
}

func (cc *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cc.c.add(query)
	return cc.pq().ExecContext(ctx, query, args)
}

func (cc *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cc.c.add(query)
	return cc.pq().QueryContext(ctx, query, args)
}

func (cc *countingConn) CheckNamedValue(v *driver.NamedValue) error {
	return cc.pq().CheckNamedValue(v)
}
func (cc *countingConn) Ping(ctx context.Context) error { return cc.pq().Ping(ctx) }
func (cc *countingConn) ResetSession(ctx context.Context) error {
	return cc.pq().ResetSession(ctx)
}
func (cc *countingConn) IsValid() bool { return cc.pq().IsValid() }

type countingTx struct {
	inner driver.Tx
	c     *Statements
}

func (t countingTx) Commit() error   { t.c.add("COMMIT"); return t.inner.Commit() }
func (t countingTx) Rollback() error { t.c.add("ROLLBACK"); return t.inner.Rollback() }

type countingStmt struct {
	inner driver.Stmt
	query string
	c     *Statements
}

func (s *countingStmt) Close() error  { return s.inner.Close() }
func (s *countingStmt) NumInput() int { return s.inner.NumInput() }

func (s *countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.c.add(s.query)
	return s.inner.Exec(args) //nolint:staticcheck // database/sql only calls this without context
}

func (s *countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.c.add(s.query)
	return s.inner.Query(args) //nolint:staticcheck
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.c.add(s.query)
	return s.inner.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.add(s.query)
	return s.inner.(driver.StmtQueryContext).QueryContext(ctx, args)
}
