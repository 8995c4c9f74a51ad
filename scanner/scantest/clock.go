package scantest

import (
	"bytes"
	"sync"
	"time"
)

// Clock is the one fake clock of the tests: time stands still until the test moves it. Pass
// its Now where a component takes a clock (the breaker, the capacity, the daily quota, the
// pool, the handlers); it is safe for the goroutines of the code under test. Timers and tickers
// do not follow it: a test that needs them to fire runs inside testing/synctest, whose bubble
// fakes time.Now, timers and tickers alike.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// LogBuffer is the one log sink the code under test's goroutines and the test share: an
// slog handler writes to it while the test reads it.
type LogBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.written() <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

// Written receives after something was written, for a test that waits for a line: read
// String, and wait on Written while the line is not there.
func (l *LogBuffer) Written() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written()
}

func (l *LogBuffer) written() chan struct{} {
	if l.wrote == nil {
		l.wrote = make(chan struct{}, 1)
	}
	return l.wrote
}

// String is everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Reset forgets everything written so far.
func (l *LogBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}
