package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/lib/pq"

	"sitepulse/store"
)

// This store's errors read as the domain's: store.Classify answers store.ErrUnavailable for
// every error outage says is Postgres being away.
func init() { store.RegisterOutage(outage) }

// outage answers whether err says Postgres is away rather than that the request or the code is
// wrong: the connection refused, reset or closed, the server shutting down or out of
// connections, a statement out of time, or what the store keeps gone from under it (the database
// dropped, the schema dropped: every relation missing). Each is the database's, passes, and is
// retried; database/sql reconnects by itself on the next call.
func outage(err error) bool {
	var pe *pq.Error
	if errors.As(err, &pe) {
		switch pe.Code.Class() {
		case "08", // connection exception
			"57", // operator intervention: admin_shutdown, crash_shutdown, cannot_connect_now
			"53": // insufficient resources: too_many_connections, out of memory, disk full
			return true
		}
		switch pe.Code {
		case "3D000", // invalid_catalog_name: the database was dropped
			"3F000", // invalid_schema_name: the schema was dropped
			"42P01", // undefined_table: the store's relations are gone with it
			"42883": // undefined_function: so are the functions of migration 026
			return true
		}
		return false
	}
	// database/sql's own: a call after the pool was closed (a request racing the shutdown).
	if strings.Contains(err.Error(), "sql: database is closed") {
		return true
	}
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &oe):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// A query that ran out of time while the database did not answer; a request whose
		// client went away ends with context.Canceled instead, which is not counted.
		return true
	}
	return false
}
