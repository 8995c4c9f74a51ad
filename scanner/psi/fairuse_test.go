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
	q := NewAccountQuota(2, st)
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
		if !errors.As(err, &wait) || !wait.Until.Equal(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)) || !strings.Contains(err.Error(), "USER_DAILY_AUDITS") {
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

// A store that cannot count grants the audit: the scan's own writes stop it if the database is
// down, and no account is snoozed for a day over a failure of seconds.
func TestAccountQuotaFailsOpen(t *testing.T) {
	q := NewAccountQuota(1, downLedger{})
	now := time.Now()
	if err := q.Check("ann", now); err != nil {
		t.Errorf("check with the store down: %v, want nil", err)
	}
	if err := q.Take("ann", now); err != nil {
		t.Errorf("take with the store down: %v, want nil", err)
	}
}

type downLedger struct{}

func (downLedger) TakeAudit(context.Context, string, time.Time, int) (bool, error) {
	return false, store.ErrUnavailable
}

func (downLedger) AuditsTaken(context.Context, string, time.Time) (int, error) {
	return 0, store.ErrUnavailable
}

func quotaUser(t *testing.T, st store.Store, name string) string {
	t.Helper()
	u := store.User{ID: store.NewID(), Email: name + "-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	if err := st.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u.ID
}
