package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Implementations wrap them with %w; Classify finds them.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	// ErrUnavailable means the database could not be reached, dropped the connection (a
	// restart, a failover, a network cut) or lost what the store keeps in it (the database or
	// its schema dropped), rather than a bad query or bad data. Such a failure
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
// acts on: ErrNotFound, ErrConflict, ErrInvalid, ErrScanActive, ErrLeaseLost, ErrForbidden,
// ErrGone, or ErrUnavailable for a store whose backend is away (as the store that has one reads
// its own errors: RegisterOutage). Any other error (a bug: a 500) comes back as it is, and nil as
// nil.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	for _, sentinel := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrScanActive, ErrLeaseLost, ErrUnavailable, ErrForbidden, ErrGone} {
		if errors.Is(err, sentinel) {
			return sentinel
		}
	}
	for _, away := range outages {
		if away(err) {
			return ErrUnavailable
		}
	}
	return err
}

// outages are the stores' readings of their own errors as outages (RegisterOutage).
var outages []func(error) bool

// RegisterOutage adds away to what Classify reads as ErrUnavailable: a store with a backend
// (store/postgres) registers, from its package's init, how its driver and the network say that
// the backend is away, so this package knows no database package. Call it only from an init.
func RegisterOutage(away func(error) bool) { outages = append(outages, away) }
