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
// With the key's day shared (AuditLimits.Day set), past AUDIT_SHARE_MARK of PSI_DAILY_LIMIT
// what is left is shared among the accounts that audited that day, and NEWCOMER_RESERVE of it
// is kept for accounts that had not (store.AdmitAudit states the rule). Past any limit, the
// workspace's scans are snoozed until the next UTC day with a message naming the limit and
// when it lifts; other workspaces' scans go on. It counts in the store, one atomic call per audit, so
// the budgets hold across every replica on the database: N replicas grant them once, not N times.
// A nil quota grants everything.
//
// A store error grants the audit (fails open): the budget stops one tenant from spending what
// all share, and a database that cannot count audits cannot store their results either, so the
// scan stops on its next write and is retried; failing closed would instead snooze every
// tenant's scans until the next UTC day over a failure of a few seconds.
//
// An audit that calls no PSI key (the local Lighthouse, a runner) spends the workspace's budget
// only: the accounts' budgets and the key's day are the key's (store.AuditLimits.KeyFree), so a
// workspace of 2,000 sites on runners is sized by USER_DAILY_AUDITS alone.
type AccountQuota struct {
	limits store.AuditLimits
	ledger AuditLedger
	// keyFree answers whether a workspace's next scan is audited without the PSI key (the
	// process's backend is the local Lighthouse, or runners serve the workspace), for Check; nil:
	// every scan calls the key.
	keyFree func(ctx context.Context, workspaceID string) bool
}

// ledgerWait bounds one count in the store: Take and Check have no context of their own, and
// an audit is not held up longer than this by a database that does not answer.
const ledgerWait = 5 * time.Second

// QuotaMark, AccountQuotaMark, ShareMark, ReserveMark and KeyDayMark are in the reason of every
// scan parked for a daily audit budget (a workspace's, an account's, its share of the key's day
// past the mark, the newcomers' reserve, the key's whole day): the deadline finds such scans by
// them in their job's last error (ParkedForBudget), and lets them wait as promised.
const (
	QuotaMark        = "(USER_DAILY_AUDITS)"
	AccountQuotaMark = "(ACCOUNT_AUDIT_SHARE)"
	ShareMark        = "(AUDIT_SHARE_MARK)"
	ReserveMark      = "(NEWCOMER_RESERVE)"
	KeyDayMark       = "(PSI_DAILY_LIMIT across accounts)"
)

// ParkedForBudget answers whether a scan's last error is a daily audit budget's wait.
func ParkedForBudget(reason string) bool {
	for _, mark := range []string{QuotaMark, AccountQuotaMark, ShareMark, ReserveMark, KeyDayMark} {
		if strings.Contains(reason, mark) {
			return true
		}
	}
	return false
}

// NewAccountQuota grants the audits limits allow per workspace and per account per UTC day,
// counted in ledger.
// keyFree (nil: none) says which workspaces' scans call no PSI key, for Check.
func NewAccountQuota(limits store.AuditLimits, ledger AuditLedger, keyFree func(ctx context.Context, workspaceID string) bool) *AccountQuota {
	return &AccountQuota{limits: limits, ledger: ledger, keyFree: keyFree}
}

// limitsFor are the limits of an audit: keyFree ones count against the workspace's budget only.
func (q *AccountQuota) limitsFor(keyFree bool) store.AuditLimits {
	l := q.limits
	l.KeyFree = keyFree
	return l
}

// Take spends one audit of workspaceID's budget and its owners' (only the workspace's when the
// audit is keyFree: it calls no PSI key), or answers an *UnavailableError until the next day.
func (q *AccountQuota) Take(workspaceID string, now time.Time, keyFree bool) error {
	if q == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWait)
	defer cancel()
	l := q.limitsFor(keyFree)
	if ok, err := q.ledger.TakeAudit(ctx, workspaceID, now, l); err == nil && !ok {
		used, _ := q.ledger.AuditsTaken(ctx, workspaceID, now) // which budget, for the message
		return q.spent(l, used, now)
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
	l := q.limitsFor(q.keyFree != nil && q.keyFree(ctx, workspaceID))
	if used, err := q.ledger.AuditsTaken(ctx, workspaceID, now); err == nil && refused(l, used) != "" {
		return q.spent(l, used, now)
	}
	return nil
}

// refused is the limit an audit under l of a workspace that has spent used would meet ("" none):
// the store's rule again, on the workspace's most spent owner.
func refused(l store.AuditLimits, used store.AuditUsage) string {
	if used.Workspace >= l.Workspace {
		return store.RefusedWorkspace
	}
	if l.KeyFree {
		return ""
	}
	return store.AdmitAudit(l, used.Key, used.Askers, store.AccountDay{Used: used.Account, Late: used.Late})
}

// spent is the wait of a workspace whose budget, one of whose owners' account budgets, or whose
// owners' part of the key's day is spent: it names the limit met, and when it lifts (the next
// UTC day, when every count starts again).
func (q *AccountQuota) spent(l store.AuditLimits, used store.AuditUsage, now time.Time) error {
	until := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	wait := func(reason string, args ...any) error {
		return &UnavailableError{What: "this workspace's scans wait", Until: until, Reason: fmt.Sprintf(reason, args...)}
	}
	r := refused(l, used)
	if r == "" && !l.KeyFree { // refused by a co-owner's count, or by one that changed since: as before, the account's
		r = store.RefusedAccount
	}
	switch r {
	case store.RefusedAccount:
		return wait("an owner's daily budget of %d audits across all their workspaces %s is used up; other accounts' scans go on", l.Account, AccountQuotaMark)
	case store.RefusedDay:
		return wait("the PSI key's day of %d audits %s is used up by every account's scans", l.Day, KeyDayMark)
	case store.RefusedShare:
		askers := max(used.Askers, 1)
		return wait("past %d of the PSI key's %d daily audits %s, the %d left above the newcomers' reserve are shared among the %d accounts that audited today, %d each, and an owner has taken its share; other accounts' scans go on",
			l.Mark, l.Day, ShareMark, max(l.Day-l.Reserve-l.Mark, 0), askers, max(l.Day-l.Reserve-l.Mark, 0)/askers)
	case store.RefusedReserve:
		return wait("the PSI key's last %d audits of the day %s are kept for the first scans of accounts that had not audited today; other accounts' scans go on", l.Reserve, ReserveMark)
	}
	return wait("its daily budget of %d audits %s is used up; other workspaces' scans go on", l.Workspace, QuotaMark)
}
