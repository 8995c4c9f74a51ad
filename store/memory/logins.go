package memory

import (
	"context"
	"time"

	"sitepulse/store"
)

// memLogin is an account's count of login attempts (TakeLoginAttempt).
type memLogin struct {
	since    time.Time // the first attempt of the window
	failures int
	nextAt   time.Time // past the burst, the next attempt is allowed from here
}

func (m *Store) TakeLoginAttempt(ctx context.Context, key string, now time.Time, limit store.LoginLimit) (bool, time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now = store.Now(now)
	if m.logins == nil {
		m.logins = map[string]memLogin{}
	}
	if now.Sub(m.loginsSwept) > time.Minute { // forget counts whose window and wait are over
		for k, l := range m.logins {
			if k != key && !l.since.After(now.Add(-limit.Window)) && !l.nextAt.After(now) {
				delete(m.logins, k)
			}
		}
		m.loginsSwept = now
	}
	l, seen := m.logins[key]
	switch {
	case !seen || !l.since.After(now.Add(-limit.Window)):
		l = memLogin{since: now, failures: 1, nextAt: now}
	case l.failures < limit.Burst || !l.nextAt.After(now):
		l.failures++
	default:
		return false, l.nextAt.Sub(now), nil
	}
	if l.failures >= limit.Burst {
		l.nextAt = now.Add(limit.Every)
	}
	m.logins[key] = l
	return true, 0, nil
}

func (m *Store) ClearLoginAttempts(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.logins, key)
	return nil
}
