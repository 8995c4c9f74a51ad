package storetest_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// testAuditBudget: USER_DAILY_AUDITS counted in the store, so replicas share it.
func testAuditBudget(t *testing.T, s store.Store) {
	ann, bob := newUser(t, s, "ann@example.com"), newUser(t, s, "bob@example.com")
	late := time.Date(2026, 11, 24, 23, 59, 59, 0, time.FixedZone("CET", 3600)) // 22:59:59 UTC
	const limit = 7

	// 40 takers at once, each trying 3 times: exactly the limit is granted.
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				ok, err := s.TakeAudit(ctx, ann.ID, late, limit)
				if err != nil {
					t.Error(err)
				}
				if ok {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if granted.Load() != limit {
		t.Fatalf("%d audits granted, want the limit of %d", granted.Load(), limit)
	}
	if used, err := s.AuditsTaken(ctx, ann.ID, late); err != nil || used != limit {
		t.Errorf("audits taken: %d, %v; want %d", used, err, limit)
	}

	tests := []struct {
		name   string
		userID string
		at     time.Time
		limit  int
		want   bool
	}{
		{"a spent budget grants nothing more that day", ann.ID, late.Add(-20 * time.Hour), limit, false},
		{"another account has its own budget", bob.ID, late, limit, true},
		{"the next UTC day starts afresh", ann.ID, late.Add(time.Hour + time.Second), limit, true},
		{"a limit of 0 grants nothing", bob.ID, late, 0, false},
		{"a higher limit grants more of the same day", ann.ID, late, limit + 1, true},
	}
	for _, tt := range tests {
		if got, err := s.TakeAudit(ctx, tt.userID, tt.at, tt.limit); err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	next := late.Add(time.Hour + time.Second)
	if used, _ := s.AuditsTaken(ctx, ann.ID, next); used != 1 {
		t.Errorf("the next day: %d taken, want 1", used)
	}
	if used, _ := s.AuditsTaken(ctx, ann.ID, late); used != limit+1 {
		t.Errorf("the day before, once the next began: %d taken, want %d", used, limit+1)
	}
	// Two days later the take forgets the days before yesterday: the first day reads 0.
	if ok, err := s.TakeAudit(ctx, ann.ID, late.AddDate(0, 0, 2), limit); !ok || err != nil {
		t.Errorf("two days later: %v, %v", ok, err)
	}
	if used, _ := s.AuditsTaken(ctx, ann.ID, late); used != 0 {
		t.Errorf("a day before yesterday: %d taken, want 0 (forgotten)", used)
	}

	_, err := s.TakeAudit(ctx, store.NewID(), late, limit)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.TakeAudit(ctx, "not-a-uuid", late, limit)
	wantErr(t, err, store.ErrNotFound)
	if used, err := s.AuditsTaken(ctx, "not-a-uuid", late); used != 0 || err != nil {
		t.Errorf("an unknown user's audits: %d, %v; want 0", used, err)
	}
}

// BenchmarkTakeAudit is USER_DAILY_AUDITS' cost per audit on each store: one statement on
// Postgres, taken by 4 goroutines per CPU on one account, the worst case: every take waits on the same row.
//
//	DATABASE_URL=... go test ./store/storetest/ -run '^$' -bench TakeAudit
func BenchmarkTakeAudit(b *testing.B) {
	for _, be := range storetest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			s := be.Open(b)
			u := newUser(b, s, "bench@example.com")
			now := time.Now()
			b.SetParallelism(4) // 4 x GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.TakeAudit(ctx, u.ID, now, 1<<30); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
