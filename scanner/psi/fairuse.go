package psi

import (
	"context"
	"fmt"
	"time"
)

// AuditLedger is what AccountQuota needs of the store: the accounts' audits per UTC day,
// counted in the database every replica shares (store.AuditLedger).
type AuditLedger interface {
	TakeAudit(ctx context.Context, userID string, now time.Time, limit int) (bool, error)
	AuditsTaken(ctx context.Context, userID string, now time.Time) (int, error)
}

// AccountQuota is USER_DAILY_AUDITS: how many audits the scans of one account may make per UTC
// day, so one account cannot spend the PSI quota every account shares. Past it,
// the workspace's scans are snoozed until the next UTC day with a message saying so; other
// workspaces' scans go on. It counts in the store, one atomic statement per audit, so the
// budget holds across every replica on the database: N replicas grant it once, not N times.
// A nil quota grants everything.
//
// A store error grants the audit (fails open): the budget stops one account from spending what
// all share, and a database that cannot count audits cannot store their results either, so the
// scan stops on its next write and is retried; failing closed would instead snooze every
// account's scans until the next UTC day over a failure of a few seconds.
type AccountQuota struct {
	limit  int
	ledger AuditLedger
}

// ledgerWait bounds one count in the store: Take and Check have no context of their own, and
// an audit is not held up longer than this by a database that does not answer.
const ledgerWait = 5 * time.Second

// NewAccountQuota grants limit audits per account per UTC day, counted in ledger.
// QuotaMark is in the reason of every scan parked for the account's daily audits: the deadline
// finds such scans by it in their job's last error, and lets them wait as promised.
const QuotaMark = "(USER_DAILY_AUDITS)"

func NewAccountQuota(limit int, ledger AuditLedger) *AccountQuota {
	return &AccountQuota{limit: limit, ledger: ledger}
}

// Take spends one audit of userID's budget, or answers an *UnavailableError until the next day.
func (q *AccountQuota) Take(userID string, now time.Time) error {
	if q == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWait)
	defer cancel()
	if ok, err := q.ledger.TakeAudit(ctx, userID, now, q.limit); err == nil && !ok {
		return q.spent(now)
	}
	return nil // taken, or the store failed: fail open (see AccountQuota)
}

// Check answers the *UnavailableError Take would, without spending.
func (q *AccountQuota) Check(userID string, now time.Time) error {
	if q == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWait)
	defer cancel()
	if used, err := q.ledger.AuditsTaken(ctx, userID, now); err == nil && used >= q.limit {
		return q.spent(now)
	}
	return nil
}

func (q *AccountQuota) spent(now time.Time) error {
	return &UnavailableError{What: "this workspace's scans wait", Until: now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour),
		Reason: fmt.Sprintf("its daily budget of %d audits %s is used up; other workspaces' scans go on", q.limit, QuotaMark)}
}
