package scanner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

func TestAccountQuota(t *testing.T) {
	q := NewAccountQuota(2)
	day := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	for i := range 2 {
		if err := q.Take("ann", day); err != nil {
			t.Fatalf("audit %d: %v", i+1, err)
		}
	}
	err := q.Take("ann", day)
	var wait *UnavailableError
	if !errors.As(err, &wait) || !wait.Until.Equal(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)) || !strings.Contains(err.Error(), "USER_DAILY_AUDITS") {
		t.Errorf("third audit: %v, want a wait until midnight UTC naming USER_DAILY_AUDITS", err)
	}
	if err := q.Take("bob", day); err != nil {
		t.Errorf("another account: %v, want its own budget", err)
	}
	if err := q.Take("ann", day.Add(time.Hour)); err != nil {
		t.Errorf("the next day: %v, want a fresh budget", err)
	}
	if err := (*AccountQuota)(nil).Take("ann", day); err != nil {
		t.Errorf("no quota: %v", err)
	}
}

// One account that spends its daily budget waits with a clear message; another account's scan
// goes on and completes.
func TestAccountQuotaPipeline(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			jobs := &jobLog{Store: b.Open(t), jobs: map[string]int64{}}
			r := newRig(t, jobs) // the owner's site: five pages, ten audits
			other := &rig{t: t, st: jobs, psi: r.psi, logs: r.logs}
			other.user = store.User{ID: store.NewID(), Email: "other-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: time.Now()}
			if err := jobs.CreateUser(context.Background(), other.user); err != nil {
				t.Fatal(err)
			}
			otherSite := other.addSite("Other", []string{"/", "/fast"})
			r.pool(func(c *PoolConfig) {
				c.Quota, c.Capacity = NewAccountQuota(4), NewCapacity(CapacityConfig{MaxInFlight: 1})
			})
			greedy := r.enqueue(r.site)
			if sc := other.wait(other.enqueue(otherSite).ID); sc.Status != store.StatusComplete {
				t.Errorf("the other account's scan: %s (%s), want complete", sc.Status, sc.Error)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				j, ok := jobs.job(t, greedy.ID)
				if ok && j.State == store.JobAvailable && j.Snoozes() > 0 {
					if !strings.Contains(j.LastError, "daily budget of 4 audits (USER_DAILY_AUDITS) is used up") || j.Attempt-j.Snoozes() != 0 {
						t.Errorf("job: %q after %d attempts and %d snoozes, want the budget named and no attempt spent", j.LastError, j.Attempt, j.Snoozes())
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the greedy scan was not snoozed; logs:\n%s", r.logs.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if results, errs := r.results(greedy.ID); len(results)+len(errs) != 4 {
				t.Errorf("%d audits stored for the greedy scan, want its budget of 4", len(results)+len(errs))
			}
		})
	}
}
