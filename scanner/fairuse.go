package scanner

import (
	"fmt"
	"sync"
	"time"
)

// AccountQuota is USER_DAILY_AUDITS: how many audits the scans of one account may make per UTC
// day, so one account cannot spend the PSI quota every account shares (SECURITY §9). Past it,
// the account's scans are snoozed until the next UTC day with a message saying so; other
// accounts' scans go on. It counts in this process: each replica grants its own budget. A nil
// quota grants everything.
type AccountQuota struct {
	limit int
	mu    sync.Mutex
	day   time.Time // the UTC day counted
	used  map[string]int
}

// NewAccountQuota grants limit audits per account per UTC day.
func NewAccountQuota(limit int) *AccountQuota {
	return &AccountQuota{limit: limit, used: map[string]int{}}
}

// Take spends one audit of userID's budget, or answers an *UnavailableError until the next day.
func (q *AccountQuota) Take(userID string, now time.Time) error {
	return q.spend(userID, now, 1)
}

// Check answers the *UnavailableError Take would, without spending.
func (q *AccountQuota) Check(userID string, now time.Time) error {
	return q.spend(userID, now, 0)
}

func (q *AccountQuota) spend(userID string, now time.Time, n int) error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if day := now.UTC().Truncate(24 * time.Hour); !day.Equal(q.day) {
		q.day, q.used = day, map[string]int{}
	}
	if q.used[userID] >= q.limit {
		return &UnavailableError{What: "this account's scans wait", Until: q.day.Add(24 * time.Hour),
			Reason: fmt.Sprintf("its daily budget of %d audits (USER_DAILY_AUDITS) is used up; other accounts' scans go on", q.limit)}
	}
	q.used[userID] += n
	return nil
}
