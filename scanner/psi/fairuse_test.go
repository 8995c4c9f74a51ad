package psi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
)

func TestAccountQuota(t *testing.T) {
	st := memory.New()
	ann, bob := quotaUser(t, st, "ann"), quotaUser(t, st, "bob")
	q := NewAccountQuota(store.AuditLimits{Workspace: 2, Account: 100}, st, nil)
	day := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	for i := range 2 {
		if err := q.Check(ann, day); err != nil {
			t.Fatalf("check before audit %d: %v", i+1, err)
		}
		if err := q.Take(ann, day, false); err != nil {
			t.Fatalf("audit %d: %v", i+1, err)
		}
	}
	for what, err := range map[string]error{"check": q.Check(ann, day), "third audit": q.Take(ann, day, false)} {
		var wait *UnavailableError
		if !errors.As(err, &wait) || !wait.Until.Equal(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)) || !strings.Contains(err.Error(), "USER_DAILY_AUDITS") ||
			!ParkedForBudget(err.Error()) {
			t.Errorf("%s: %v, want a wait until midnight UTC naming USER_DAILY_AUDITS", what, err)
		}
	}
	if err := q.Take(bob, day, false); err != nil {
		t.Errorf("another account: %v, want its own budget", err)
	}
	if err := q.Take(ann, day.Add(time.Hour), false); err != nil {
		t.Errorf("the next day: %v, want a fresh budget", err)
	}
	if err := (*AccountQuota)(nil).Take(ann, day, false); err != nil {
		t.Errorf("no quota: %v", err)
	}
}

// An account's budget spans its workspaces: spent in one, the others' scans wait too, with a
// message that names the account's budget, not the workspace's.
func TestAccountQuotaSpansWorkspaces(t *testing.T) {
	st := memory.New()
	ann := quotaUser(t, st, "ann")
	second := store.Workspace{ID: store.NewID(), Name: "Agency", CreatedAt: time.Now()}
	if err := st.CreateWorkspace(context.Background(), second, ann, 10); err != nil {
		t.Fatal(err)
	}
	q := NewAccountQuota(store.AuditLimits{Workspace: 100, Account: 3}, st, nil)
	day := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := q.Take(ann, day, false); err != nil {
			t.Fatalf("audit %d: %v", i+1, err)
		}
	}
	for what, err := range map[string]error{"check": q.Check(second.ID, day), "take": q.Take(second.ID, day, false)} {
		var wait *UnavailableError
		if !errors.As(err, &wait) || !strings.Contains(err.Error(), "ACCOUNT_AUDIT_SHARE") || !strings.Contains(err.Error(), "3 audits") ||
			strings.Contains(err.Error(), "USER_DAILY_AUDITS") || !ParkedForBudget(err.Error()) {
			t.Errorf("%s in the second workspace: %v, want a wait naming the account's budget of 3 (ACCOUNT_AUDIT_SHARE)", what, err)
		}
	}
}

// Audits that call no PSI key (the local Lighthouse, runners) spend the workspace's budget only
// (issue 46): an owner whose share of the key is spent still has the workspaces runners serve
// audited, up to each one's own budget, whose wait then names USER_DAILY_AUDITS.
func TestKeyFreeAuditsSpendTheWorkspaceOnly(t *testing.T) {
	st := memory.New()
	ann := quotaUser(t, st, "ann")
	runners := store.Workspace{ID: store.NewID(), Name: "On runners", CreatedAt: time.Now()}
	if err := st.CreateWorkspace(context.Background(), runners, ann, 10); err != nil {
		t.Fatal(err)
	}
	served := func(_ context.Context, ws string) bool { return ws == runners.ID }
	q := NewAccountQuota(store.AuditLimits{Workspace: 4, Account: 2}, st, served)
	day := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for i := range 2 {
		if err := q.Take(ann, day, false); err != nil {
			t.Fatalf("PSI audit %d: %v", i+1, err)
		}
	}
	if err := q.Check(ann, day); err == nil || !strings.Contains(err.Error(), "ACCOUNT_AUDIT_SHARE") {
		t.Errorf("ann's personal workspace, on the key: %v, want the account's wait", err)
	}
	for i := range 4 {
		if err := q.Check(runners.ID, day); err != nil {
			t.Fatalf("check before key-free audit %d: %v, want none: runners serve the workspace", i+1, err)
		}
		if err := q.Take(runners.ID, day, true); err != nil {
			t.Fatalf("key-free audit %d: %v, want granted past the account's share of the key", i+1, err)
		}
	}
	for what, err := range map[string]error{"check": q.Check(runners.ID, day), "take": q.Take(runners.ID, day, true)} {
		if err == nil || !strings.Contains(err.Error(), "USER_DAILY_AUDITS") || strings.Contains(err.Error(), "ACCOUNT_AUDIT_SHARE") || !ParkedForBudget(err.Error()) {
			t.Errorf("%s past the workspace's 4: %v, want the workspace's wait (USER_DAILY_AUDITS)", what, err)
		}
	}
}

// A store that cannot count grants the audit: the scan's own writes stop it if the database is
// down, and no account is snoozed for a day over a failure of seconds.
func TestAccountQuotaFailsOpen(t *testing.T) {
	q := NewAccountQuota(store.AuditLimits{Workspace: 1, Account: 1}, downLedger{}, nil)
	now := time.Now()
	if err := q.Check("ann", now); err != nil {
		t.Errorf("check with the store down: %v, want nil", err)
	}
	if err := q.Take("ann", now, false); err != nil {
		t.Errorf("take with the store down: %v, want nil", err)
	}
}

type downLedger struct{}

func (downLedger) TakeAudit(context.Context, string, time.Time, store.AuditLimits) (bool, error) {
	return false, store.ErrUnavailable
}

func (downLedger) AuditsTaken(context.Context, string, time.Time) (store.AuditUsage, error) {
	return store.AuditUsage{}, store.ErrUnavailable
}

func quotaUser(t *testing.T, st store.Store, name string) string {
	t.Helper()
	u := store.User{ID: store.NewID(), Email: name + "-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	if err := st.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u.ID
}
