package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
)

// writeCountingConn is one of the store's connections, counting in writes every statement that
// may have written once it has completed (a statement's result, its rows closed, a commit or a
// rollback), so that a site version held by the process (versions.go) is not trusted past a
// write of the process's own. Every statement counts but the hot paths' reads (readOnly):
// counting a read only costs a held version its next statement.
type writeCountingConn struct {
	DriverConn
	writes *atomic.Uint64
}

// DriverConn is what lib/pq's connection implements and database/sql uses: what a wrapper of
// the store's connections passes on (these, and storetest's counting ones).
type DriverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.NamedValueChecker
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// countWrites wraps c, lib/pq's connection, to count its writes in writes.
func countWrites(c driver.Conn, writes *atomic.Uint64) driver.Conn {
	pc, ok := c.(DriverConn)
	if !ok || writes == nil {
		return c
	}
	return &writeCountingConn{DriverConn: pc, writes: writes}
}

// readOnly is true of the statements of the hot paths that only read: a site's version and an
// API key's lookups (STABLE functions, migrations 026 and 027).
func readOnly(query string) bool {
	return strings.HasPrefix(query, versionReadPrefix) || query == budgetKeySQL || query == apiKeyByHashSQL
}

func (c *writeCountingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.DriverConn.ExecContext(ctx, query, args)
	return res, counted(c.writes, err)
}

func (c *writeCountingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.DriverConn.QueryContext(ctx, query, args)
	if readOnly(query) {
		return rows, err
	}
	return countedRows(c.writes, rows, err)
}

func (c *writeCountingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.DriverConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	ds, ok := st.(driverStmt)
	if !ok { // lib/pq's statements have them
		st.Close()
		return nil, errors.New("postgres: the driver's prepared statement takes no context")
	}
	return &writeCountingStmt{driverStmt: ds, writes: c.writes}, nil
}

func (c *writeCountingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *writeCountingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.DriverConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return writeCountingTx{Tx: tx, writes: c.writes}, nil
}

func (c *writeCountingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

type writeCountingTx struct {
	driver.Tx
	writes *atomic.Uint64
}

func (t writeCountingTx) Commit() error { return counted(t.writes, t.Tx.Commit()) }

func (t writeCountingTx) Rollback() error { return counted(t.writes, t.Tx.Rollback()) }

// writeCountingRows counts again when its statement is done: a write returning rows
// (INSERT ... RETURNING, a function that writes) commits when they have been read.
type writeCountingRows struct {
	driver.Rows
	writes *atomic.Uint64
}

func (r *writeCountingRows) Close() error { return counted(r.writes, r.Rows.Close()) }

// writeCountingStmt is a prepared statement, counted as the connection's statements are. The
// store prepares none (a transaction pooler would break them); this keeps the count whole if
// one ever is. database/sql calls the context methods whenever a statement has them.
type writeCountingStmt struct {
	driverStmt
	writes *atomic.Uint64
}

// driverStmt is what lib/pq's prepared statement implements and database/sql uses.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

func (s *writeCountingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.driverStmt.ExecContext(ctx, args)
	return res, counted(s.writes, err)
}

func (s *writeCountingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.driverStmt.QueryContext(ctx, args)
	return countedRows(s.writes, rows, err)
}

// counted counts a completed statement in writes and passes its error on: counted(w, f())
// counts once f has returned.
func counted(writes *atomic.Uint64, err error) error {
	writes.Add(1)
	return err
}

// countedRows counts a statement that returns rows once it has run, and again when its rows are
// closed (writeCountingRows).
func countedRows(writes *atomic.Uint64, rows driver.Rows, err error) (driver.Rows, error) {
	if err = counted(writes, err); err != nil {
		return rows, err
	}
	return &writeCountingRows{Rows: rows, writes: writes}, nil
}
