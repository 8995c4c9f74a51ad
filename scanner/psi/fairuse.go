package psi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sitepulse/store"
)

// AuditLedger is what AccountQuota needs of the store: the workspaces' and the accounts' audits
// per UTC day, counted in the database every replica shares (store.AuditLedger).
type AuditLedger interface {
	TakeAudit(ctx context.Context, workspaceID string, now time.Time, limits store.AuditLimits) (bool, error)
	AuditsTaken(ctx context.Context, workspaceID string, now time.Time) (store.AuditUsage, error)
}

// AccountQuota is the daily audit budgets every audit is taken against, so no tenant spends the
// PSI quota all of them share: a workspace's (USER_DAILY_AUDITS), and each of its owners'
// accounts' across every workspace they own (ACCOUNT_AUDIT_SHARE of PSI_DAILY_LIMIT), so an
// account with ten workspaces, or one that deletes and recreates a workspace, spends no more.
// Past either, the workspace's scans are snoozed until the next UTC day with a message saying
// which; other workspaces' scans go on. It counts in the store, one atomic call per audit, so
// the budgets hold across every replica on the database: N replicas grant them once, not N times.
// A nil quota grants everything.
//
// A store error grants the audit (fails open): the budget stops one tenant from spending what
// all share, and a database that cannot count audits cannot store their results either, so the
// scan stops on its next write and is retried; failing closed would instead snooze every
// tenant's scans until the next UTC day over a failure of a few seconds.
type AccountQuota struct {
	limits store.AuditLimits
	ledger AuditLedger
}

// ledgerWait bounds one count in the store: Take and Check have no context of their own, and
// an audit is not held up longer than this by a database that does not answer.
const ledgerWait = 5 * time.Second

// QuotaMark and AccountQuotaMark are in the reason of every scan parked for a workspace's or an
// account's daily audits: the deadline finds such scans by them in their job's last error
// (ParkedForBudget), and lets them wait as promised.
const (
	QuotaMark        = "(USER_DAILY_AUDITS)"
	AccountQuotaMark = "(ACCOUNT_AUDIT_SHARE)"
)

// ParkedForBudget answers whether a scan's last error is a daily audit budget's wait.
func ParkedForBudget(reason string) bool {
	return strings.Contains(reason, QuotaMark) || strings.Contains(reason, AccountQuotaMark)
}

// NewAccountQuota grants the audits limits allow per workspace and per account per UTC day,
// counted in ledger.
func NewAccountQuota(limits store.AuditLimits, ledger AuditLedger) *AccountQuota {
	return &AccountQuota{limits: limits, ledger: ledger}
}

// Take spends one audit of workspaceID's budget and its owners', or answers an
// *UnavailableError until the next day.
func (q *AccountQuota) Take(workspaceID string, now time.Time) error {
	if q == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWait)
	defer cancel()
	if ok, err := q.ledger.TakeAudit(ctx, workspaceID, now, q.limits); err == nil && !ok {
		used, _ := q.ledger.AuditsTaken(ctx, workspaceID, now) // which budget, for the message
		return q.spent(used, now)
	}
	return nil // taken, or the store failed: fail open (see AccountQuota)
}

// Check answers the *UnavailableError Take would, without spending.
func (q *AccountQuota) Check(workspaceID string, now time.Time) error {
	if q == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWait)
	defer cancel()
	if used, err := q.ledger.AuditsTaken(ctx, workspaceID, now); err == nil && (used.Workspace >= q.limits.Workspace || used.Account >= q.limits.Account) {
		return q.spent(used, now)
	}
	return nil
}

// spent is the wait of a workspace whose budget, or one of whose owners' account budgets, is
// spent: the account's when the workspace's is not.
func (q *AccountQuota) spent(used store.AuditUsage, now time.Time) error {
	until := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	if used.Workspace < q.limits.Workspace {
		return &UnavailableError{What: "this workspace's scans wait", Until: until,
			Reason: fmt.Sprintf("an owner's daily budget of %d audits across all their workspaces %s is used up; other accounts' scans go on", q.limits.Account, AccountQuotaMark)}
	}
	return &UnavailableError{What: "this workspace's scans wait", Until: until,
		Reason: fmt.Sprintf("its daily budget of %d audits %s is used up; other workspaces' scans go on", q.limits.Workspace, QuotaMark)}
}
