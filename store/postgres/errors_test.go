package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/lib/pq"

	"sitepulse/store"
)

// A database that cannot be reached is told apart from a bad query, missing row or conflict:
// the first is a 503 and worth retrying, the others are not.
func TestUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"connection refused, wrapped", fmt.Errorf("claim job: %w", refused), true},
		{"connection reset", fmt.Errorf("x: %w", syscall.ECONNRESET), true},
		{"bad connection", driver.ErrBadConn, true},
		{"connection closed under a transaction", fmt.Errorf("x: %w", sql.ErrConnDone), true},
		{"pool closed (a request racing the shutdown)", fmt.Errorf("x: %w", closedDBError()), true},
		{"EOF mid-query", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true},
		{"admin shutdown (57P01)", &pq.Error{Code: "57P01"}, true},
		{"the database is starting up (57P03)", fmt.Errorf("x: %w", &pq.Error{Code: "57P03"}), true},
		{"too many connections (53300)", &pq.Error{Code: "53300"}, true},
		{"the database dropped (3D000)", fmt.Errorf("x: %w", &pq.Error{Code: "3D000"}), true},
		{"the schema dropped: no relation (42P01)", &pq.Error{Code: "42P01"}, true},
		{"query timed out", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"client went away", context.Canceled, false},
		{"unique violation", &pq.Error{Code: "23505"}, false},
		{"syntax error", &pq.Error{Code: "42601"}, false},
		{"not found", store.ErrNotFound, false},
		{"no rows", sql.ErrNoRows, false},
		{"other", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.Classify(tt.err) == store.ErrUnavailable; got != tt.want {
				t.Errorf("Unavailable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// closedDBError is what database/sql answers once the pool is closed ("sql: database is closed",
// unexported).
func closedDBError() error {
	db, err := sql.Open("postgres", "postgres://127.0.0.1:1/x")
	if err != nil {
		panic(err)
	}
	db.Close()
	return db.Ping()
}
