package psi

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// CapacityConfig configures a Capacity. Zero values get the defaults noted.
type CapacityConfig struct {
	// MaxInFlight is PSI_MAX_INFLIGHT (LIGHTHOUSE_CONCURRENCY for the local backend): the most
	// audits, and the most calls, in flight at once in this process. Default 64.
	MaxInFlight int
	// Limiter is the PSI rate limit: a 429 lowers it with the in-flight cap, and audits wait for
	// a slot while calls queue at it. The PSI client must then take its calls from this Capacity
	// (Config.Capacity), or slots stop at a second's worth of calls. nil: only the cap adapts.
	Limiter *RateLimiter
	// Recover is how often, once a 429's Retry-After has passed and no other 429 came, the cap
	// climbs back by one and the rate by a tenth. A 429 that follows a step doubles the period,
	// up to 16 times, until both are whole again. Default 10 s.
	Recover time.Duration
	Now     func() time.Time
	Log     *slog.Logger
}

// Capacity is the audit capacity of a process, shared by every scan running in it: at most
// limit audits hold a slot at once, and the slots go fairly to the scans that wait for one
// (the one with the fewest audits in flight first, so one big site does not starve a small
// one); while the rate limit binds, slots wait rather than queue calls at it, so the share
// holds there too. The PSI client takes a call slot for each request under the same limit: a
// 429 lowers the limit to what PSI accepted (the calls in flight, less one per refusal),
// pauses every call until its Retry-After, and lowers the rate limit with it; both climb back
// a step every Recover without a 429. So a key with a smaller quota than configured gets a few
// 429s, not a storm, and its scans still finish.
type Capacity struct {
	cfg     CapacityConfig
	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever a waiter may now go
	limit   int           // the cap now, 1..MaxInFlight
	audits  int           // audits holding a slot
	calls   int           // calls holding a call slot: waiting for the rate limit, or sent
	// waiting is the order in which the waiting shares asked: a count, not a time, so that two
	// shares asking within one tick of a coarse clock (or at once on a fake one) are still
	// ordered, and every waiter agrees on which is the fairest. With equal times the choice
	// followed map order, differently for each waiter, and two waiters could each find the
	// other fairest and wait for a change that never came.
	waiting map[*Share]uint64
	asked   uint64        // the count of Acquire calls, for waiting
	pause   time.Time     // no call is sent before this (Retry-After)
	step    time.Time     // the next recovery step; zero when whole
	every   time.Duration // the recovery period now, Recover doubled by each failed probe
	probing bool          // a step was taken since the last 429
	warned  time.Time     // when a 429 was last logged
	latency time.Duration
}

// NewCapacity returns a capacity at its full cap, with cfg's defaults filled in.
func NewCapacity(cfg CapacityConfig) *Capacity {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 64
	}
	if cfg.Recover <= 0 {
		cfg.Recover = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Capacity{cfg: cfg, changed: make(chan struct{}), limit: cfg.MaxInFlight, waiting: map[*Share]uint64{},
		every: cfg.Recover}
}

// Share is one scan's part of the capacity.
type Share struct {
	c        *Capacity
	inFlight int // guarded by c.mu
}

// Share returns a new scan's share, holding no slot.
func (c *Capacity) Share() *Share { return &Share{c: c} }

// Acquire waits for an audit slot, or for ctx to end. Among the scans waiting, a free slot goes
// to the one with the fewest audits in flight, the longest waiting on a tie.
func (s *Share) Acquire(ctx context.Context) error {
	c := s.c
	c.mu.Lock()
	c.asked++
	c.waiting[s] = c.asked
	for {
		c.recoverLocked()
		room, retry := c.roomLocked()
		if room && c.fairestLocked() == s {
			delete(c.waiting, s)
			c.audits++
			s.inFlight++
			c.signalLocked() // the next fairest may go too
			c.mu.Unlock()
			return nil
		}
		changed := c.changed
		c.mu.Unlock()
		if err := waitChange(ctx, changed, retry); err != nil {
			c.mu.Lock()
			delete(c.waiting, s)
			c.signalLocked()
			c.mu.Unlock()
			return err
		}
		c.mu.Lock()
	}
}

// roomLocked answers whether an audit may take a slot now: one is free under the cap, and the
// rate limit is not already backed up. Audits holding a slot while their calls wait for the
// rate limit would only queue there, ahead of the audits of scans that ask later, and undo the
// fair share; so a slot waits while a second's worth of calls (at least one) are queued at the
// limiter or about to be. Otherwise retry is when the next queued call is due (0: wait for a
// change).
func (c *Capacity) roomLocked() (room bool, retry time.Duration) {
	if c.audits >= c.limit {
		return false, 0
	}
	if c.cfg.Limiter == nil {
		return true, 0
	}
	queued, next, perSecond := c.cfg.Limiter.backlog()
	starting := c.audits - c.calls // granted a slot, not yet waiting for a call
	if starting+queued < max(1, int(perSecond)) {
		return true, 0
	}
	return false, next
}

// waitChange waits for changed to close, for retry to pass (0: no limit), or for ctx to end.
func waitChange(ctx context.Context, changed <-chan struct{}, retry time.Duration) error {
	var later <-chan time.Time
	if retry > 0 {
		t := time.NewTimer(retry)
		defer t.Stop()
		later = t.C
	}
	select {
	case <-changed:
	case <-later:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

// Release gives back a slot Acquire granted.
func (s *Share) Release() {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.audits--
	s.inFlight--
	c.signalLocked()
}

// InFlight is how many audits of the scan hold a slot.
func (s *Share) InFlight() int {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.inFlight
}

// fairestLocked is the waiting share with the fewest audits in flight, the longest waiting on a tie.
func (c *Capacity) fairestLocked() *Share {
	var best *Share
	var first uint64
	for s, at := range c.waiting {
		if best == nil || s.inFlight < best.inFlight || s.inFlight == best.inFlight && at < first {
			best, first = s, at
		}
	}
	return best
}

func (c *Capacity) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// call waits for a call slot: no Retry-After pause pending and fewer calls in flight than the
// cap. done gives the slot back with how long the call itself took, for Latency.
func (c *Capacity) call(ctx context.Context) (done func(took time.Duration), err error) {
	c.mu.Lock()
	for {
		c.recoverLocked()
		now := c.cfg.Now()
		if now.Before(c.pause) {
			wait := c.pause.Sub(now)
			c.mu.Unlock()
			if err := sleepCtx(ctx, wait); err != nil {
				return nil, context.Cause(ctx)
			}
			c.mu.Lock()
			continue
		}
		if c.calls < c.limit {
			c.calls++
			c.signalLocked() // an audit starting its call may let another take a slot
			c.mu.Unlock()
			return c.endCall, nil
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		c.mu.Lock()
	}
}

func (c *Capacity) endCall(took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls--
	switch {
	case took <= 0: // never sent
	case c.latency == 0:
		c.latency = took
	default: // a moving average over about the last ten calls
		c.latency += (took - c.latency) / 10
	}
	c.signalLocked()
}

// Throttled records a 429 from PSI for a call still holding its slot: the cap drops to the
// calls in flight less this one, calls pause for retryAfter (0: none given), the rate limit
// drops to the calls of the last window less one, and recovery starts over after the pause,
// more slowly when this 429 answers a recovery step's probe.
func (c *Capacity) Throttled(retryAfter time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	c.limit = max(1, min(c.limit, c.calls)-1)
	if until := now.Add(retryAfter); until.After(c.pause) {
		c.pause = until
	}
	if c.probing {
		c.every, c.probing = min(2*c.every, 16*c.cfg.Recover), false
	}
	c.step = later(c.pause, now).Add(c.every)
	rate := 0
	if c.cfg.Limiter != nil {
		rate = c.cfg.Limiter.lower(c.pause)
	}
	if now.Sub(c.warned) >= time.Second { // a burst of 429s is one line
		c.warned = now
		c.cfg.Log.Warn("PSI quota exceeded: fewer audits at once", "max_inflight", c.limit,
			"rate_per_window", rate, "retry_after", retryAfter, "recover_every", c.every)
	}
}

// recoverLocked climbs the cap and the rate back one step per Recover since the last 429,
// until both are whole again.
func (c *Capacity) recoverLocked() {
	now := c.cfg.Now()
	for !c.step.IsZero() && !now.Before(c.step) {
		c.limit = min(c.limit+1, c.cfg.MaxInFlight)
		whole := c.cfg.Limiter == nil || c.cfg.Limiter.raise()
		c.step, c.probing = c.step.Add(c.every), true
		if c.limit == c.cfg.MaxInFlight && whole {
			c.step, c.probing, c.every = time.Time{}, false, c.cfg.Recover
			c.cfg.Log.Info("PSI capacity recovered", "max_inflight", c.limit)
		}
		c.signalLocked()
	}
}

// MaxInFlight is the configured cap (PSI_MAX_INFLIGHT) within which Limit adapts.
func (c *Capacity) MaxInFlight() int { return c.cfg.MaxInFlight }

// Limit is the cap on audits in flight now.
func (c *Capacity) Limit() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recoverLocked()
	return c.limit
}

// Latency is the moving average of the time calls took, 0 before the first.
func (c *Capacity) Latency() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latency
}

// Ideal is the shortest time audits can take on this capacity when an audit's call takes
// latency (the calls' moving average when calls went through it, else callLatency): the rate
// limit's bound, audits/rate + latency, or the in-flight cap's, ceil(audits/cap) x latency,
// whichever is longer.
func (c *Capacity) Ideal(audits int, callLatency time.Duration) time.Duration {
	latency := c.Latency()
	if latency == 0 {
		latency = callLatency
	}
	perSecond := 0.0
	if c.cfg.Limiter != nil {
		perSecond = c.cfg.Limiter.configured()
	}
	return idealWall(audits, c.cfg.MaxInFlight, perSecond, latency)
}

// idealWall is the shortest time audits take with at most inFlight at once, perSecond a
// second (0: no rate limit), each taking latency.
func idealWall(audits, inFlight int, perSecond float64, latency time.Duration) time.Duration {
	if audits <= 0 {
		return 0
	}
	rounds := (audits + inFlight - 1) / max(inFlight, 1)
	wall := time.Duration(rounds) * latency
	if perSecond > 0 {
		wall = max(wall, time.Duration(float64(audits)/perSecond*float64(time.Second))+latency)
	}
	return wall
}
