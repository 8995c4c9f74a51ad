package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// Sentinel errors. Implementations wrap them with %w; Classify finds them.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	// ErrUnavailable means the database could not be reached or dropped the connection (a
	// restart, a failover, a network cut), rather than a bad query or bad data. Such a failure
	// is the database's and passes: handlers answer 503 with Retry-After instead of 500, and the
	// scanner retries the write instead of failing the scan. database/sql reconnects by itself
	// on the next call.
	ErrUnavailable = errors.New("the database is unavailable")
	// ErrScanActive is SCAN_ALREADY_ACTIVE: the site already has a queued or running scan.
	ErrScanActive = errors.New("SCAN_ALREADY_ACTIVE")
	// ErrLimit means the user already holds as many of something as a fair-use cap allows
	// (CreateSiteWithin, CreateReportWithin).
	ErrLimit = errors.New("limit reached")
	// ErrLeaseLost means the job is no longer this worker's: it was rescued and claimed again,
	// or finished. The write was not made.
	ErrLeaseLost = errors.New("job lease lost")
)

// notFound is ErrNotFound for what.
func NotFound(what string) error { return fmt.Errorf("%s: %w", what, ErrNotFound) }

// Classify is the one mapping from what went wrong in a store call to the sentinel its caller
// acts on: ErrNotFound, ErrConflict, ErrInvalid, ErrScanActive, ErrLeaseLost, or ErrUnavailable for the
// driver's and the network's connection failures. Any other error (a bug: a 500) comes back
// as it is, and nil as nil.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	for _, sentinel := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrScanActive, ErrLeaseLost, ErrUnavailable, ErrForbidden, ErrGone} {
		if errors.Is(err, sentinel) {
			return sentinel
		}
	}
	if unreachable(err) {
		return ErrUnavailable
	}
	return err
}

// unreachable answers whether err is a connection failure of the driver or the network.
func unreachable(err error) bool {
	// The driver's error, read through the SQLSTATE it reports (lib/pq's *pq.Error has
	// SQLState), so this package needs no driver.
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		switch class(pe.SQLState()) {
		case "08", // connection exception
			"57", // operator intervention: admin_shutdown, crash_shutdown, cannot_connect_now
			"53": // insufficient resources: too_many_connections, out of memory, disk full
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

// class is the class of a SQLSTATE code: its first two characters.
func class(code string) string {
	if len(code) < 2 {
		return code
	}
	return code[:2]
}
