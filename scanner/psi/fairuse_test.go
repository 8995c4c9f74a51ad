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
	q := NewAccountQuota(store.AuditLimits{Workspace: 2, Account: 100}, st)
	day := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	for i := range 2 {
		if err := q.Check(ann, day); err != nil {
			t.Fatalf("check before audit %d: %v", i+1, err)
		}
		if err := q.Take(ann, day); err != nil {
			t.Fatalf("audit %d: %v", i+1, err)
		}
	}
	for what, err := range map[string]error{"check": q.Check(ann, day), "third audit": q.Take(ann, day)} {
		var wait *UnavailableError
		if !errors.As(err, &wait) || !wait.Until.Equal(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)) || !strings.Contains(err.Error(), "USER_DAILY_AUDITS") ||
			!ParkedForBudget(err.Error()) {
			t.Errorf("%s: %v, want a wait until midnight UTC naming USER_DAILY_AUDITS", what, err)
		}
	}
	if err := q.Take(bob, day); err != nil {
		t.Errorf("another account: %v, want its own budget", err)
	}
	if err := q.Take(ann, day.Add(time.Hour)); err != nil {
		t.Errorf("the next day: %v, want a fresh budget", err)
	}
	if err := (*AccountQuota)(nil).Take(ann, day); err != nil {
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
	q := NewAccountQuota(store.AuditLimits{Workspace: 100, Account: 3}, st)
	day := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := q.Take(ann, day); err != nil {
			t.Fatalf("audit %d: %v", i+1, err)
		}
	}
	for what, err := range map[string]error{"check": q.Check(second.ID, day), "take": q.Take(second.ID, day)} {
		var wait *UnavailableError
		if !errors.As(err, &wait) || !strings.Contains(err.Error(), "ACCOUNT_AUDIT_SHARE") || !strings.Contains(err.Error(), "3 audits") ||
			strings.Contains(err.Error(), "USER_DAILY_AUDITS") || !ParkedForBudget(err.Error()) {
			t.Errorf("%s in the second workspace: %v, want a wait naming the account's budget of 3 (ACCOUNT_AUDIT_SHARE)", what, err)
		}
	}
}

// A store that cannot count grants the audit: the scan's own writes stop it if the database is
// down, and no account is snoozed for a day over a failure of seconds.
func TestAccountQuotaFailsOpen(t *testing.T) {
	q := NewAccountQuota(store.AuditLimits{Workspace: 1, Account: 1}, downLedger{})
	now := time.Now()
	if err := q.Check("ann", now); err != nil {
		t.Errorf("check with the store down: %v, want nil", err)
	}
	if err := q.Take("ann", now); err != nil {
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
