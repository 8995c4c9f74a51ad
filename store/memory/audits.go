package memory

import (
	"context"
	"slices"
	"time"

	"sitepulse/store"
)

func dayOf(now time.Time) time.Time { return now.UTC().Truncate(24 * time.Hour) }

// TakeAudit and payers are written twice: take_audit and audit_payers (Postgres, migrations
// 022_account_audits.sql and 039_key_day_shares.sql) are the same rule in PL/pgSQL. The contract
// tests testAuditBudget, testAccountAuditBudget and testKeyDayShares keep the two equal
// (rulesWrittenTwice in store/storetest/twice_test.go): change both, run them on both stores.
// A key-free audit (AuditLimits.KeyFree) is takeKeyFreeAuditSQL's rule, kept equal by
// testKeyFreeAudits.

// keyDay is every account's audits of a UTC day, and how many accounts took one.
type keyDay struct{ used, askers int }

// payers are the accounts a workspace's audit on day counts against, as Postgres's audit_payers:
// its owners, and its creator when it made it that day. The caller holds m.mu.
func (m *Store) payers(workspaceID string, day time.Time) []string {
	var out []string
	for k, mb := range m.members {
		if k[0] == workspaceID && mb.Role == store.RoleOwner {
			out = append(out, mb.UserID)
		}
	}
	if by, ok := m.creators[workspaceID]; ok && !m.workspaces[workspaceID].CreatedAt.Before(day) && !slices.Contains(out, by) {
		out = append(out, by)
	}
	return out
}

// dayCounts is the counts of key in counts, days before yesterday forgotten (as Postgres does).
func dayCounts(counts map[string]map[time.Time]int, key string, day time.Time) map[time.Time]int {
	days := counts[key]
	if days == nil {
		days = map[time.Time]int{}
		counts[key] = days
	}
	for d := range days {
		if d.Before(day.AddDate(0, 0, -1)) {
			delete(days, d)
		}
	}
	return days
}

func (m *Store) TakeAudit(ctx context.Context, workspaceID string, now time.Time, limits store.AuditLimits) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workspaces[workspaceID]; !ok {
		return false, store.NotFound("workspace")
	}
	day := dayOf(now)
	ws, payers := dayCounts(m.audits, workspaceID, day), m.payers(workspaceID, day)
	for d := range m.keyAudits {
		if d.Before(day.AddDate(0, 0, -1)) {
			delete(m.keyAudits, d)
		}
	}
	key := m.keyAudits[day]
	if ws[day] >= limits.Workspace {
		return false, nil
	}
	if limits.KeyFree { // the workspace's budget only: the accounts' and the key's day are the key's
		ws[day]++
		return true, nil
	}
	for _, p := range payers {
		a := store.AccountDay{Used: dayCounts(m.accountAudits, p, day)[day], Late: dayCounts(m.lateAudits, p, day)[day]}
		if store.AdmitAudit(limits, key.used, key.askers, a) != "" {
			return false, nil
		}
	}
	ws[day]++
	late := store.LateAudit(limits, key.used)
	for _, p := range payers {
		if m.accountAudits[p][day] == 0 {
			key.askers++
		}
		m.accountAudits[p][day]++
		if late {
			m.lateAudits[p][day]++
		}
	}
	key.used++
	m.keyAudits[day] = key
	return true, nil
}

func (m *Store) AuditsTaken(ctx context.Context, workspaceID string, now time.Time) (store.AuditUsage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	day := dayOf(now)
	u := store.AuditUsage{Workspace: m.audits[workspaceID][day]}
	if _, ok := m.workspaces[workspaceID]; !ok {
		return u, nil
	}
	for _, p := range m.payers(workspaceID, day) {
		if used := m.accountAudits[p][day]; used > u.Account || used == u.Account && m.lateAudits[p][day] > u.Late {
			u.Account, u.Late = used, m.lateAudits[p][day]
		}
	}
	u.Key, u.Askers = m.keyAudits[day].used, m.keyAudits[day].askers
	return u, nil
}
