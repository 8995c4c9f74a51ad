package scantest

import (
	"bytes"
	"sync"
	"time"
)

// Clock is the one fake clock of the tests: time stands still until the test moves it. Pass
// its Now where a component takes a clock (the breaker, the capacity, the daily quota, the
// pool, the handlers); it is safe for the goroutines of the code under test. Its NewTimer
// makes timers that fire when the clock is moved past them (the handlers' budget check waits,
// whose tests hold HTTP connections and Postgres, which a synctest bubble cannot); other
// timers and tickers do not follow it: a test that needs them to fire runs inside
// testing/synctest, whose bubble fakes time.Now, timers and tickers alike.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	c       chan time.Time
	stopped bool
}

// NewTimer is time.NewTimer on the clock: the channel receives once the clock is moved to d
// from now or later, unless stop (which answers whether it stopped a timer yet to fire) came
// first.
func (c *Clock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), c: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	c.fire()
	return t.c, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Pending lists how far from now each timer yet to fire is set: a test moves the clock once the
// code under test has set the timer it means to fire.
func (c *Clock) Pending() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, t := range c.timers {
		if !t.stopped {
			out = append(out, t.at.Sub(c.now))
		}
	}
	return out
}

// fire sends on the timers that are due, once; the caller holds mu.
func (c *Clock) fire() {
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			t.c <- c.now
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
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
	c.fire()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.fire()
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
