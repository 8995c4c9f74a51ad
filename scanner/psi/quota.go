package psi

import (
	"sync"
	"time"
)

// quotaZone is Google's quota day: API quotas reset at midnight Pacific time. Without the
// system's tzdata it is a fixed UTC-8 (PST): in summer the reset it computes is then an hour
// late (01:00 PDT), never early, so a paused scanner never calls PSI before the quota is back.
// Nothing is embedded (time/tzdata would add 450 kB for that hour).
var quotaZone = func() *time.Location {
	if loc, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return loc
	}
	return time.FixedZone("PST", -8*60*60)
}()

// QuotaReset is the start of the quota day after the one holding now: the next midnight in
// America/Los_Angeles.
func QuotaReset(now time.Time) time.Time {
	t := now.In(quotaZone)
	y, m, d := t.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, quotaZone)
}

// DailyCounter counts PSI calls per quota day, shared by every worker of a process like the
// RateLimiter: PSI_DAILY_LIMIT. Google's published 25,000 a day is a third-party figure; a
// process that reaches its own limit stops before Google refuses it.
type DailyCounter struct {
	mu    sync.Mutex
	limit int
	count int
	reset time.Time // end of the quota day being counted
}

// NewDailyCounter allows limit calls per quota day.
func NewDailyCounter(limit int) *DailyCounter { return &DailyCounter{limit: max(limit, 1)} }

// take counts one call at now when the day's limit allows it; otherwise it answers false and
// the time the count starts again.
func (c *DailyCounter) take(now time.Time) (ok bool, reset time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !now.Before(c.reset) {
		c.count, c.reset = 0, QuotaReset(now)
	}
	if c.count >= c.limit {
		return false, c.reset
	}
	c.count++
	return true, c.reset
}

// Spent answers whether the limit is reached at now, and until when, without counting a call.
func (c *DailyCounter) Spent(now time.Time) (bool, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !now.Before(c.reset) {
		return false, time.Time{}
	}
	return c.count >= c.limit, c.reset
}

// Used answers the calls counted in the quota day of now, and the limit.
func (c *DailyCounter) Used(now time.Time) (used, limit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !now.Before(c.reset) {
		return 0, c.limit
	}
	return c.count, c.limit
}
