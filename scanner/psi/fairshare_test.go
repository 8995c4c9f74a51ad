package psi

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// shareLimits are the defaults' shares of a day of day audits (ACCOUNT_AUDIT_SHARE 30 %,
// AUDIT_SHARE_MARK 70 %, NEWCOMER_RESERVE 10 %), a first scan being 10 pages x 2 strategies.
func shareLimits(day int) store.AuditLimits {
	return store.AuditLimits{Workspace: 6000, Account: day * 30 / 100, Day: day, Mark: day * 70 / 100, Reserve: day / 10, Newcomer: 20}
}

// unsharedLimits are the same day before issue 44: every account up to its 30 %, the day's end
// the only stop (as each process's PSI_DAILY_LIMIT counter was).
func unsharedLimits(day int) store.AuditLimits {
	return store.AuditLimits{Workspace: 6000, Account: day * 30 / 100, Day: day, Mark: day}
}

// waitFor checks a refused audit: a wait (not a failure) naming the limit met, until the next
// midnight UTC, in words and in the time the scan page shows.
func waitFor(t *testing.T, err error, mark string, now time.Time) {
	t.Helper()
	midnight := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	var wait *UnavailableError
	if !errors.As(err, &wait) || !wait.Until.Equal(midnight) || !strings.Contains(err.Error(), mark) || !ParkedForBudget(err.Error()) ||
		!strings.Contains(err.Error(), "until "+midnight.Format("2 Jan 2006, 15:04 UTC")) {
		t.Errorf("refused with %v, want a wait naming %s until %s", err, mark, midnight)
	}
}

// spend takes audits of workspace ws until one is refused, and answers how many it took and
// the refusal.
func spend(q *AccountQuota, ws string, now time.Time) (int, error) {
	for n := 0; ; n++ {
		if err := q.Take(ws, now, false); err != nil {
			return n, err
		}
	}
}

// Twenty sign-ups spend at full speed at once, on the fake clock: the key's day is never
// overspent, none takes past the mark more than its share of what was left, the reserve stays
// whole, and newcomers then get their first scans from it; each refusal names its limit and
// when it lifts.
func TestKeyDayShareManyAccounts(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			clock := scantest.NewClock(time.Date(2026, 12, 3, 0, 5, 0, 0, time.UTC))
			shareLimits := shareLimits(400)
			q := NewAccountQuota(shareLimits, st, nil)
			signups := make([]string, 20)
			for i := range signups {
				signups[i] = quotaUser(t, st, fmt.Sprintf("signup%d", i))
				if err := q.Take(signups[i], clock.Now(), false); err != nil { // each asks: a first audit
					t.Fatal(err)
				}
			}
			clock.Advance(time.Hour)
			var wg sync.WaitGroup
			var mu sync.Mutex
			refusals := map[string]int{}
			for _, ws := range signups {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := spend(q, ws, clock.Now())
					waitFor(t, err, "", clock.Now())
					mu.Lock()
					defer mu.Unlock()
					for _, mark := range []string{ShareMark, AccountQuotaMark, ReserveMark} {
						if strings.Contains(err.Error(), mark) {
							refusals[mark]++
						}
					}
				}()
			}
			wg.Wait()
			share := (shareLimits.Day - shareLimits.Reserve - shareLimits.Mark) / len(signups)
			for i, ws := range signups {
				used, err := st.AuditsTaken(t.Context(), ws, clock.Now())
				if err != nil || used.Late > share || used.Account > shareLimits.Account || used.Key > shareLimits.Day-shareLimits.Reserve {
					t.Errorf("sign-up %d: %+v, %v; want at most its share of %d past the mark, the key's day at most %d", i+1, used, err, share, shareLimits.Day-shareLimits.Reserve)
				}
			}
			used, _ := st.AuditsTaken(t.Context(), signups[0], clock.Now())
			t.Logf("%s: 20 sign-ups at full speed spent %d of the key's %d (mark %d, a share of %d each past it, %d left for newcomers); refusals %v",
				b.Name, used.Key, shareLimits.Day, shareLimits.Mark, share, shareLimits.Day-used.Key, refusals)
			if refusals[ShareMark]+refusals[AccountQuotaMark]+refusals[ReserveMark] != len(signups) {
				t.Errorf("refusals %v, want each sign-up stopped by its share past the mark, its own budget or the reserve", refusals)
			}

			// Newcomers after the others exhausted their shares: a first scan each from the
			// reserve, then a wait naming the reserve; once the day is spent, a wait naming it.
			clock.Advance(time.Hour)
			var firsts []int
			for i := 0; ; i++ {
				n, err := spend(q, quotaUser(t, st, fmt.Sprintf("newcomer%d", i)), clock.Now())
				if n == 0 {
					waitFor(t, err, KeyDayMark, clock.Now())
					break
				}
				firsts = append(firsts, n)
				if day, _ := st.AuditsTaken(t.Context(), signups[0], clock.Now()); day.Key < shareLimits.Day {
					waitFor(t, err, ReserveMark, clock.Now())
				}
			}
			day, _ := st.AuditsTaken(t.Context(), signups[0], clock.Now())
			t.Logf("%s: newcomers' first scans from the reserve: %v audits; the day ends at %d of %d", b.Name, firsts, day.Key, shareLimits.Day)
			if len(firsts) == 0 || firsts[0] != shareLimits.Newcomer || day.Key != shareLimits.Day {
				t.Errorf("newcomers took %v and the day ended at %d; want a first scan of %d each, and the day at %d exactly", firsts, day.Key, shareLimits.Newcomer, shareLimits.Day)
			}
			for _, ws := range signups {
				if err := q.Check(ws, clock.Now()); err == nil {
					t.Error("a sign-up's scan was let start with the key's day spent")
				}
			}
			clock.Set(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)) // when the waits said
			if err := q.Take(signups[0], clock.Now(), false); err != nil {
				t.Errorf("at midnight UTC: %v, want the next day's audits", err)
			}
		})
	}
}

// A newcomer's first scan of the day (10 pages, 20 audits) after four hostile accounts spent
// at full speed, taking turns audit by audit: before issue 44 the four spend the key's whole day
// (4 x 30 % = 120 %) and the newcomer waits until tomorrow; now the reserve keeps its first scan.
//
//	go test ./scanner/psi -run TestNewcomerFirstScanFigures -v
func TestNewcomerFirstScanFigures(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		for _, c := range []struct {
			name   string
			limits store.AuditLimits
		}{{"before (unshared)", unsharedLimits(200)}, {"after (shared past 70%, 10% reserve)", shareLimits(200)}} {
			t.Run(b.Name+"/"+c.name, func(t *testing.T) {
				st := b.Open(t)
				now := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
				q := NewAccountQuota(c.limits, st, nil)
				hostile := make([]string, 4)
				for i := range hostile {
					hostile[i] = quotaUser(t, st, fmt.Sprintf("hostile%d", i))
				}
				spent := make([]int, len(hostile))
				for going := true; going; {
					going = false
					for i, ws := range hostile {
						if q.Take(ws, now, false) == nil {
							spent[i]++
							going = true
						}
					}
				}
				n, err := spend(q, quotaUser(t, st, "newcomer"), now)
				n = min(n, 20) // its first scan's audits
				verdict := "admitted"
				if n < 20 {
					verdict = "snoozed: " + err.Error()
				}
				t.Logf("%s, %s: four hostile accounts took %v audits of the key's %d; a newcomer's first scan got %d of its 20 audits, %s",
					b.Name, c.name, spent, c.limits.Day, n, verdict)
				if after := c.limits.Reserve > 0; after && n != 20 || !after && n != 0 {
					t.Errorf("%s: the newcomer got %d audits", c.name, n)
				}
				if !strings.HasPrefix(c.name, "before") && n != 20 {
					t.Errorf("the newcomer's first scan got %d of its 20 audits, want all", n)
				}
			})
		}
	}
}
