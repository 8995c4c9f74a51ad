package storetest_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestLoginAttempts is the contract of the per-account cap on failed logins: counted in the
// store so that every replica shares it, the same answers from memory and Postgres.
func TestLoginAttempts(t *testing.T) {
	limit := store.LoginLimit{Burst: 5, Window: 24 * time.Hour, Every: time.Minute}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)
			ctx := t.Context()
			take := func(key string, at time.Time) (bool, time.Duration) {
				t.Helper()
				ok, wait, err := s.TakeLoginAttempt(ctx, key, at, limit)
				if err != nil {
					t.Fatal(err)
				}
				return ok, wait
			}

			t.Run("a burst, then one attempt every interval", func(t *testing.T) {
				for i := range 5 {
					if ok, _ := take("ann", t0.Add(time.Duration(i)*time.Second)); !ok {
						t.Fatalf("attempt %d refused within the burst", i+1)
					}
				}
				ok, wait := take("ann", t0.Add(10*time.Second))
				if ok || wait != 54*time.Second {
					t.Fatalf("6th attempt: ok=%v wait=%v, want refused for 54s (a minute after the 5th, at 4s)", ok, wait)
				}
				if ok, _ := take("ann", t0.Add(64*time.Second)); !ok {
					t.Fatal("refused a minute after the last counted attempt")
				}
				if ok, wait := take("ann", t0.Add(65*time.Second)); ok || wait != 59*time.Second {
					t.Fatalf("second attempt of the minute: ok=%v wait=%v, want refused for 59s", ok, wait)
				}
				// Another account is not affected.
				if ok, _ := take("bob", t0.Add(65*time.Second)); !ok {
					t.Fatal("another account was throttled")
				}
			})
			t.Run("the count starts again after the window", func(t *testing.T) {
				later := t0.Add(24*time.Hour + 2*time.Second)
				for i := range 5 {
					if ok, _ := take("ann", later.Add(time.Duration(i)*time.Millisecond)); !ok {
						t.Fatalf("attempt %d of the new window refused", i+1)
					}
				}
				if ok, _ := take("ann", later.Add(time.Second)); ok {
					t.Fatal("the new window allowed more than its burst")
				}
			})
			t.Run("a success clears the count", func(t *testing.T) {
				at := t0.Add(48*time.Hour + time.Hour)
				for range 5 {
					take("cat", at)
				}
				if ok, _ := take("cat", at); ok {
					t.Fatal("not refused after the burst")
				}
				if err := s.ClearLoginAttempts(ctx, "cat"); err != nil {
					t.Fatal(err)
				}
				if ok, _ := take("cat", at); !ok {
					t.Fatal("refused after the count was cleared")
				}
				if err := s.ClearLoginAttempts(ctx, "never-seen"); err != nil {
					t.Fatalf("clearing an unknown key: %v", err)
				}
			})
			t.Run("parallel attempts get exactly the burst", func(t *testing.T) {
				var okCount atomic.Int32
				var wg sync.WaitGroup
				at := t0.Add(96 * time.Hour)
				for range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ok, _, err := s.TakeLoginAttempt(ctx, "dan", at, limit)
						if err != nil {
							t.Error(err)
						}
						if ok {
							okCount.Add(1)
						}
					}()
				}
				wg.Wait()
				if got := okCount.Load(); got != 5 {
					t.Errorf("%d of 20 parallel attempts allowed, want the burst of 5", got)
				}
			})
		})
	}
}
