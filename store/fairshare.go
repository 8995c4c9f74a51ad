package store

// The PSI key's day shared among accounts (issue 44): each account stays under its own
// budget (ACCOUNT_AUDIT_SHARE), but shares of 30% add up to more than the whole, so four
// accounts could spend the key's day before a new tenant's first scan. AdmitAudit is the rule
// that keeps room for them; the stores apply it inside TakeAudit (in Go for the memory store,
// in PL/pgSQL for Postgres: admit_audit, migration 039), and psi.AccountQuota applies it again
// to say which limit a refused scan met. The contract tests testAuditBudget,
// testAccountAuditBudget and testKeyDayShares keep the two stores equal: change both.

// AccountDay is one account's audits of a UTC day: all of them, and those taken once the key's
// day had passed the mark (AuditLimits.Mark).
type AccountDay struct {
	Used int
	Late int
}

// The limits AdmitAudit answers: an audit is refused by the first it meets; "" admits it.
const (
	RefusedWorkspace = "workspace" // the workspace's day (USER_DAILY_AUDITS)
	RefusedAccount   = "account"   // the account's budget (ACCOUNT_AUDIT_SHARE)
	RefusedDay       = "day"       // the key's whole day is spent (PSI_DAILY_LIMIT)
	RefusedShare     = "share"     // past the mark, the account's share of what was left (AUDIT_SHARE_MARK)
	RefusedReserve   = "reserve"   // what is left is the newcomers' reserve (NEWCOMER_RESERVE)
)

// AdmitAudit decides one account's next audit of a UTC day (the workspace's own budget is
// checked before it). key is the audits every account has taken that day, on every replica;
// askers the accounts that have taken at least one; a the account's own. The rule, per
// account per UTC day, counted in the store across every process:
//
//   - No account spends past its budget, l.Account (ACCOUNT_AUDIT_SHARE of PSI_DAILY_LIMIT).
//   - With l.Day = 0 that is all (the key's day is not shared out). Otherwise nothing is
//     admitted once the day has spent l.Day audits.
//   - Below the high-water mark (l.Mark audits of the day) every account audits up to its budget.
//   - Past the mark, an account that had audited before it may take, past the mark, at most an
//     equal share of what was left: (l.Day - l.Reserve - l.Mark) / askers, floored, askers
//     counting every account that audited that day (this one included); and none of them may
//     take the last l.Reserve audits of the day.
//   - Those last l.Reserve audits are the newcomers': an account whose every audit of the day
//     came past the mark may take up to l.Newcomer audits (a first scan's: every page, both
//     strategies) anywhere up to the day's end, the reserve included; past l.Newcomer it shares
//     what is left as the others do.
//
// So the day is never overspent (l.Day), the accounts that were there first leave the reserve
// whole, and however many of them spent at full speed, a newcomer's first scan is admitted while
// the reserve holds l.Newcomer audits for it.
func AdmitAudit(l AuditLimits, key, askers int, a AccountDay) string {
	if l.Account <= 0 || a.Used >= l.Account {
		return RefusedAccount
	}
	if l.Day <= 0 {
		return ""
	}
	if key >= l.Day {
		return RefusedDay
	}
	if key < l.Mark {
		return ""
	}
	if a.Used == a.Late && a.Used < l.Newcomer {
		return ""
	}
	if key >= l.Day-l.Reserve {
		return RefusedReserve
	}
	if a.Used == 0 {
		askers++
	}
	if a.Late < (l.Day-l.Reserve-l.Mark)/max(askers, 1) {
		return ""
	}
	return RefusedShare
}

// LateAudit answers whether an audit taken when the key's day had spent key audits is taken past
// the mark: it counts in AccountDay.Late.
func LateAudit(l AuditLimits, key int) bool { return l.Day > 0 && key >= l.Mark }
