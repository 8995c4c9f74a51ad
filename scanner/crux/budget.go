package crux

import (
	"sync"
	"time"
)

// Budget counts the CrUX API calls of a process per UTC day, so the weekly refreshes stay within
// a share of the API key's quota of their own (CRUX_DAILY_REQUESTS), apart from PSI's: a refresh
// that finds it spent waits for the next day.
type Budget struct {
	mu    sync.Mutex
	limit int
	count int
	reset time.Time // the end of the day being counted
}

// NewBudget allows limit calls per UTC day.
func NewBudget(limit int) *Budget { return &Budget{limit: max(limit, 1)} }

// Take counts one call at now when the day's budget allows it; otherwise it answers false and
// when the budget starts again.
func (b *Budget) Take(now time.Time) (ok bool, reset time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !now.Before(b.reset) {
		y, m, d := now.UTC().Date()
		b.count, b.reset = 0, time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	}
	if b.count >= b.limit {
		return false, b.reset
	}
	b.count++
	return true, b.reset
}

// Used answers the calls counted on the day of now, and the limit.
func (b *Budget) Used(now time.Time) (used, limit int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !now.Before(b.reset) {
		return 0, b.limit
	}
	return b.count, b.limit
}
