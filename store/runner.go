package store

import (
	"context"
	"time"
)

// RunnerToken is the credential of runners (`sitepulse runner`, docs/runners.md): made in a
// workspace's settings by an owner, or by the operator (WorkspaceID empty), whose runners
// serve every workspace. Only its hash is kept; the token is shown once.
type RunnerToken struct {
	ID          string
	WorkspaceID string // empty: an operator's token
	Name        string
	TokenHash   string
	Prefix      string // the token's first characters, to tell tokens apart in a list
	CreatedAt   time.Time
	RevokedAt   *time.Time
}

// Operator answers whether the token is the operator's, serving every workspace.
func (t RunnerToken) Operator() bool { return t.WorkspaceID == "" }

// Runner audit states.
const (
	RunnerQueued = "queued" // waiting for a runner (or its lease expired: leasable again)
	RunnerLeased = "leased" // a runner holds it until LeaseUntil
	RunnerDone   = "done"   // its report arrived
	RunnerFailed = "failed" // the runner says the page failed (Error)
)

// RunnerAudit is one audit (a page and a strategy of a scan) handed to runners instead of being
// run in-process: the scan's worker enqueues it and waits for its report.
type RunnerAudit struct {
	ID          string
	WorkspaceID string
	SiteID      string
	ScanID      string
	PageURL     string
	Strategy    Strategy
	// Locations are the site's runner locations: only a runner of one of them may lease the
	// audit; empty: any runner.
	Locations []string
	// Avoid is the runner (RunnerKey) a confirmation re-audit prefers not to be run by: the one
	// that saw the regression. It gets the audit only once it has waited AvoidGrace.
	Avoid     string
	CreatedAt time.Time

	State      string
	LeaseID    string // the current lease's random id, the key of heartbeats and results
	TokenID    string // the token of the runner holding (or that finished) it
	Runner     string // RunnerKey of that runner
	Location   string // its location label
	LeaseUntil time.Time
	// Report is the Lighthouse JSON report the runner posted, checked on arrival; Error is
	// why the page failed on the runner. Benchmark is the report's environment.benchmarkIndex.
	Report    []byte
	Error     string
	Benchmark float64
}

// AvoidGrace is how long a confirmation re-audit waits for a runner other than the one it
// avoids before that one may lease it too.
const AvoidGrace = 10 * time.Second

// RunnerKey names one runner: its token and the name it gives (RUNNER_NAME).
func RunnerKey(tokenID, name string) string { return tokenID + "/" + name }

// RunnerFinish is what a runner posts for its lease: a report, or the page's error.
type RunnerFinish struct {
	Report    []byte
	Error     string
	Benchmark float64
}

// Runners holds runner tokens and the audits leased to runners. Every method serves the
// system: the handlers authorize the workspace (owners manage tokens) or the runner's token
// before they call.
type Runners interface {
	// CreateRunnerToken stores a token (its hash).
	CreateRunnerToken(ctx context.Context, t RunnerToken) error
	// RunnerTokens lists a workspace's unrevoked tokens, newest first; "" lists the operator's.
	RunnerTokens(ctx context.Context, workspaceID string) ([]RunnerToken, error)
	// RevokeRunnerToken revokes a token of the workspace ("" the operator's); ErrNotFound for
	// a token of another workspace or one already revoked. Its leases are given back at once.
	RevokeRunnerToken(ctx context.Context, workspaceID, tokenID string, now time.Time) error
	// RunnerTokenByHash finds an unrevoked token; ErrNotFound otherwise.
	RunnerTokenByHash(ctx context.Context, hash string) (RunnerToken, error)
	// RunnersServe answers whether runners audit the workspace's sites: it has an unrevoked
	// runner token, or the operator has one.
	RunnersServe(ctx context.Context, workspaceID string) (bool, error)

	// SetSiteLocations sets the runner locations a site is audited from (empty: any).
	SetSiteLocations(ctx context.Context, siteID string, locations []string) error
	// SiteLocations reads them; nil for a site that names none.
	SiteLocations(ctx context.Context, siteID string) ([]string, error)

	// EnqueueRunnerAudit stores an audit for runners, queued.
	EnqueueRunnerAudit(ctx context.Context, a RunnerAudit) error
	// LeaseRunnerAudit hands the runner t (named runner, at location) the oldest leasable
	// audit it may run, with a new lease id and the lease until until: queued, or leased with
	// the lease expired at now; of t's workspace (every workspace for an operator's token);
	// whose Locations are empty or hold location; not avoiding this runner unless it has waited
	// AvoidGrace. ErrNotFound when there is none.
	LeaseRunnerAudit(ctx context.Context, t RunnerToken, runner, location string, now, until time.Time) (RunnerAudit, error)
	// ExtendRunnerLease moves the lease's end to until; ErrGone when t does not hold leaseID
	// or the lease expired at now (the audit may be another runner's already).
	ExtendRunnerLease(ctx context.Context, t RunnerToken, leaseID string, now, until time.Time) error
	// FinishRunnerAudit records what the runner found; ErrGone as for ExtendRunnerLease: a
	// result from an expired lease, or from a runner not holding it, is refused.
	FinishRunnerAudit(ctx context.Context, t RunnerToken, leaseID string, f RunnerFinish, now time.Time) error
	// RunnerAudit reads an audit (the scan's worker waiting for it).
	RunnerAudit(ctx context.Context, id string) (RunnerAudit, error)
	// DeleteRunnerAudit forgets an audit (read, or its scan gave up on it).
	DeleteRunnerAudit(ctx context.Context, id string) error
	// ForgetRunnerAudits forgets every audit of a scan: a new attempt of the scan starts with
	// none of a dead attempt's left behind (their reports would otherwise stay).
	ForgetRunnerAudits(ctx context.Context, scanID string) error
}
