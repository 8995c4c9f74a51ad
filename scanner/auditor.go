package scanner

import (
	"context"

	"sitepulse/store"

	"sitepulse/scanner/lighthouse"
	"sitepulse/scanner/psi"
)

// Auditor audits one page for one strategy (mobile or desktop) and extracts its page result.
// An error is final for this page: the auditor has already retried what was worth retrying,
// and the error's text is what the scan records, so it never carries a credential.
type Auditor interface {
	Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error)
}

// Pausable is an Auditor that can be unavailable for a while (PSI behind its circuit breaker or
// out of daily quota): a scan then waits without looking for pages or spending an attempt.
type Pausable interface {
	Auditor
	Unavailable() error
}

// SiteAuditor is an Auditor that gives each site's scan an auditor of its own (main's demo:
// the demo site replayed, every other site audited for real). The pool asks it For each scan.
type SiteAuditor interface {
	Auditor
	For(site store.Site) Auditor
}

// Replayer is an Auditor that answers from recorded runs instead of auditing: its audits call
// no one, so they spend no account's daily audits and take no slot of the shared capacity.
type Replayer interface {
	Auditor
	Replays()
}

// The auditors main may choose.
var (
	_ Auditor = (*psi.Client)(nil)
	_ Auditor = (*lighthouse.Runner)(nil)
)

// auditorFor is the auditor of a site's scan.
func (p *Pool) auditorFor(site store.Site) Auditor {
	if a, ok := p.cfg.Auditor.(SiteAuditor); ok {
		return a.For(site)
	}
	return p.cfg.Auditor
}

// replayed answers whether a site's audits are replayed (see Replayer).
func (p *Pool) replayed(site store.Site) bool {
	_, ok := p.auditorFor(site).(Replayer)
	return ok
}

// capacityFor is the capacity a site's scan shares: replayed audits call nothing, so they take
// no slot of the audit capacity, whose rate limit they would never feed.
func (p *Pool) capacityFor(site store.Site) *psi.Capacity {
	if p.replayed(site) {
		return p.replayCapacity
	}
	return p.cfg.Capacity
}

// KeyFree is an auditor that calls no PSI key (the local Lighthouse, signed in or not, and
// runners): its audits count against the workspace's daily budget only, not its owners' shares
// of the key's day (store.AuditLimits.KeyFree).
type KeyFree interface{ CallsNoKey() }

var (
	_ KeyFree = (*lighthouse.Runner)(nil)
	_ KeyFree = (*lighthouse.SignedIn)(nil)
	_ KeyFree = (*leasedAuditor)(nil)
)

func (a *leasedAuditor) CallsNoKey() {}

// takeAudit spends one of the site workspace's daily audits for an audit by auditor (and of its
// owners' shares of the PSI key's day when auditor calls the key), except on a replayed site,
// whose audits call no one and spend no quota.
func (p *Pool) takeAudit(site store.Site, auditor Auditor) error {
	if p.replayed(site) {
		return nil
	}
	_, keyFree := auditor.(KeyFree)
	return p.cfg.Quota.Take(site.WorkspaceID, p.cfg.Now(), keyFree)
}
