package memory

import (
	"context"
	"time"

	"sitepulse/store"
)

func dayOf(now time.Time) time.Time { return now.UTC().Truncate(24 * time.Hour) }

func (m *Store) TakeAudit(ctx context.Context, workspaceID string, now time.Time, limit int) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workspaces[workspaceID]; !ok {
		return false, store.NotFound("workspace")
	}
	day, days := dayOf(now), m.audits[workspaceID]
	if days == nil {
		days = map[time.Time]int{}
		m.audits[workspaceID] = days
	}
	for d := range days { // as Postgres does: forget the days before yesterday
		if d.Before(day.AddDate(0, 0, -1)) {
			delete(days, d)
		}
	}
	if days[day] >= limit {
		return false, nil
	}
	days[day]++
	return true, nil
}

func (m *Store) AuditsTaken(ctx context.Context, workspaceID string, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.audits[workspaceID][dayOf(now)], nil
}
