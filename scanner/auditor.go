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
	Audit(ctx context.Context, pageURL, strategy string) (store.PageResult, error)
}

// Pausable is an Auditor that can be unavailable for a while (PSI behind its circuit breaker or
// out of daily quota): a scan then waits without looking for pages or spending an attempt.
type Pausable interface {
	Auditor
	Unavailable() error
}

// The auditors main may choose.
var (
	_ Auditor = (*psi.Client)(nil)
	_ Auditor = (*lighthouse.Runner)(nil)
	_ Auditor = (*Replay)(nil)
)
