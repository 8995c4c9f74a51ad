package storetest

import (
	"os"
	"testing"
	"time"
)

// Timeout is the one bound on how long a test waits for an event before it fails: 60 s, and
// twice that under CI=true (-race on a shared machine; the slowest wait, a real process's
// scan on a loaded 2-core machine, once took 45 s). It is a guard against a hang, never a
// measure: a test goes on as soon as its event comes, so a generous bound costs nothing.
// Inside a testing/synctest bubble it is fake time, so a hang there fails at once.
func Timeout() time.Duration {
	if os.Getenv("CI") == "true" {
		return 2 * time.Minute
	}
	return time.Minute
}

// WaitFor checks cond every few milliseconds until it holds, and fails the test, saying what
// it waited for, if it does not within Timeout (River's WaitOrTimeout, for a condition).
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Eventually(cond) {
		t.Fatalf("timed out after %s waiting for %s", Timeout(), what)
	}
}

// Eventually checks cond every few milliseconds until it holds, and answers false if it does
// not within Timeout, for a caller whose failure says more than WaitFor's.
func Eventually(cond func() bool) bool { return EventuallyWithin(Timeout(), cond) }

// EventuallyWithin is Eventually with its own guard, for what takes longer than Timeout by
// nature (a real Chromium's audits): a bound against a hang, never a measure.
func EventuallyWithin(guard time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	limit := time.NewTimer(guard)
	defer limit.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-limit.C:
			return false
		}
	}
}

// Recv waits for a value on ch and returns it, and fails the test, saying what it waited for,
// if none comes within Timeout (River's WaitOrTimeout).
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	limit := time.NewTimer(Timeout())
	defer limit.Stop()
	select {
	case v := <-ch:
		return v
	case <-limit.C:
		t.Fatalf("timed out after %s waiting for %s", Timeout(), what)
		var zero T
		return zero
	}
}
