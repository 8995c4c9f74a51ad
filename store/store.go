// Package store holds SitePulse's domain types, the Store interface and its two
// implementations: Postgres, the real store, and an in-memory store that gives the same answers
// so `go run .` works on a machine with no database. One contract suite runs against both.
//
// Every read a user can cause is scoped to the workspaces the user is a member of: methods that
// serve a user take the user's id and answer ErrNotFound for rows of any other workspace; their
// writes also need the role owner or editor there (DESIGN §9). Methods without a user id serve the system
// (the scan pipeline, the webhook, bearer verification) and say so in their doc comment.
package store

import (
	"context"
	"time"
)

// Store is everything SitePulse keeps.
type Store interface {
	Users
	Accounts
	Sites
	Scans
	Jobs
	ScanRecords
	AuditLedger
	OAuth
	Reports
	Webhooks
	Platform
	Workspaces
	SecurityLog
	Channels
	Retention
	SiteViews
	Reads
	Explains
	CruxReads
	CruxHistory
	FieldChecks
	SSO
	Runners
	BeaconReads
	BeaconWrites
	// Name is "memory" or "postgres", for the health check and the log.
	Name() string
	// Ping answers whether the store can serve requests.
	Ping(ctx context.Context) error
	// Ready answers whether the store can serve this program: it answers, and its schema has
	// every migration this program was built with (/readyz).
	Ready(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}

// Users holds accounts, sessions and API keys.
type Users interface {
	// CreateUser stores a new user, its e-mail in CanonicalEmail form; ErrConflict when the
	// e-mail is taken.
	CreateUser(ctx context.Context, u User) error
	// UserByEmail finds a user by e-mail, compared in CanonicalEmail form (bytes equal: no
	// Unicode case folding).
	UserByEmail(ctx context.Context, email string) (User, error)
	UserByID(ctx context.Context, id string) (User, error)
	SetPasswordHash(ctx context.Context, userID, hash string) error
	// SetNotifyRegressions sets the account's regression e-mails, and its personal workspace's.
	SetNotifyRegressions(ctx context.Context, userID string, on bool) error

	CreateSession(ctx context.Context, s Session) error
	// SessionByHash returns an unexpired session.
	SessionByHash(ctx context.Context, tokenHash string, now time.Time) (Session, error)
	DeleteSession(ctx context.Context, tokenHash string) error
	// TouchSession records a request of a session at now (its SeenAt), for the idle timeout.
	TouchSession(ctx context.Context, tokenHash string, now time.Time) error

	CreateAPIKey(ctx context.Context, k APIKey) error
	// APIKeys lists a user's keys that are not revoked, newest first.
	APIKeys(ctx context.Context, userID string) ([]APIKey, error)
	// APIKeyByHash finds an unrevoked key (system: bearer verification) and records its use,
	// at most once per KeyUseGranularity so that a busy key costs reads, not writes.
	APIKeyByHash(ctx context.Context, keyHash string, now time.Time) (APIKey, error)
	RevokeAPIKey(ctx context.Context, userID, keyID string, now time.Time) error

	// TakeLoginAttempt counts an attempt to log in to the account named by key (a hash of the
	// e-mail's canonical form, so that an e-mail with no account is counted alike) before
	// its password is checked, whichever address it comes from (system: the login throttle).
	// Keys are opaque: the same counter, under keys of their own, bounds the e-mails the
	// service sends on a request (invitations, sign-up and reset links) per day and address.
	// A take also forgets other keys whose window and wait are over by its own limit, so every
	// limit counted here has the same Window, a day.
	// ok is false, with how long to wait, once limit.Burst attempts were counted within
	// limit.Window and the last one was less than limit.Every ago. The take is atomic: parallel
	// attempts cannot get past the limit.
	TakeLoginAttempt(ctx context.Context, key string, now time.Time, limit LoginLimit) (ok bool, wait time.Duration, err error)
	// ClearLoginAttempts forgets key's count: the right password was given.
	ClearLoginAttempts(ctx context.Context, key string) error
}

// LoginLimit bounds the failed logins of one account across every address (NIST SP 800-63B
// §5.2.2): Burst attempts within Window of the first, then one every Every until the window
// ends.
type LoginLimit struct {
	Burst  int
	Window time.Duration
	Every  time.Duration
}

// Sites holds sites, their budgets and alert rules.
type Sites interface {
	// CreateSite stores a site; ErrConflict when its platform site id is taken.
	CreateSite(ctx context.Context, s Site) error
	// CreateSiteWithin is CreateSite into a workspace with fewer than max sites, else ErrLimit:
	// atomic, so concurrent creations cannot pass the cap together (MAX_SITES_PER_WORKSPACE).
	CreateSiteWithin(ctx context.Context, s Site, max int) error
	// UpdateSite changes name, domain, founding, pages and schedule of a site of s.UserID, and
	// its next scheduled scan to s.NextScanAt only when the schedule changes: the scheduler owns
	// it otherwise, and a copy read before it moved the site ahead must not bring the past back.
	// The platform link is not its business: only ImportPlatformSite and DisconnectPlatform change it.
	UpdateSite(ctx context.Context, s Site) error
	DeleteSite(ctx context.Context, userID, siteID string) error
	Site(ctx context.Context, userID, siteID string) (Site, error)
	// SitesOf lists the sites of every workspace the user belongs to, by name.
	SitesOf(ctx context.Context, userID string) ([]Site, error)
	// SitesIn lists the sites of one of the user's workspaces, by name (an API key's view).
	SitesIn(ctx context.Context, userID, workspaceID string) ([]Site, error)
	// SiteByPlatformID finds a site by the platform's id (system: the publish webhook).
	SiteByPlatformID(ctx context.Context, platformSiteID string) (Site, error)
	// MarkPublished sets a site's lastPublished (system: the publish webhook).
	MarkPublished(ctx context.Context, siteID string, at time.Time) error

	// Budgets returns a site's budgets by metric.
	Budgets(ctx context.Context, userID, siteID string) (map[string]Budget, error)
	// SetBudgets replaces a site's budgets; an empty strategy is stored as StrategyBoth.
	SetBudgets(ctx context.Context, userID, siteID string, budgets map[string]Budget) error
	AlertRules(ctx context.Context, userID, siteID string) ([]AlertRule, error)
	AddAlertRule(ctx context.Context, userID string, r AlertRule) error
	// UpdateAlertRule changes the metric, operator and threshold of rule r.ID of site r.SiteID,
	// keeping its id and creation time; ErrNotFound when the user has no such rule.
	UpdateAlertRule(ctx context.Context, userID string, r AlertRule) error
	DeleteAlertRule(ctx context.Context, userID, siteID, ruleID string) error
	// BudgetInputs loads what a budget check of a site reads; its Scan is nil when the site
	// has no completed scan. It is never stale: a change committed before the call is in it.
	BudgetInputs(ctx context.Context, userID, siteID string) (BudgetInputs, error)
	// SetSiteAccess stores a site's access setting (DESIGN §17), sealed by the caller, replacing
	// the one before; AccessNone removes it. ErrNotFound unless userID is an owner or editor of
	// the site's workspace.
	SetSiteAccess(ctx context.Context, userID string, a SiteAccess) error
	// SiteAccess reads a site's access setting, Kind AccessNone when it has none; ErrNotFound
	// when the site is not the user's.
	SiteAccess(ctx context.Context, userID, siteID string) (SiteAccess, error)
	// SiteAccessForScan reads a site's access setting (system: the scan of the site).
	SiteAccessForScan(ctx context.Context, siteID string) (SiteAccess, error)
	// BudgetInputsByKey authenticates an API key as APIKeyByHash does, recording its use, and
	// loads the budget inputs of the key user's site, together: on Postgres one statement of
	// two index lookups when the process already holds the site's inputs (the budget check's
	// whole store cost). ErrNotFound with an empty UserID: the key is unknown or revoked; with
	// UserID set: the site is not that user's.
	BudgetInputsByKey(ctx context.Context, keyHash, siteID string, now time.Time) (BudgetInputs, error)
}

// Scans reads scans and their page results for their owner.
type Scans interface {
	Scan(ctx context.Context, userID, scanID string) (Scan, error)
	// ScanWait tells why an unfinished scan of the user waits for its next attempt; the zero
	// ScanWait when it is running, queued for its first attempt, finished or not the user's.
	ScanWait(ctx context.Context, userID, scanID string) (ScanWait, error)
	// ScansOf lists a site's scans of every status, newest first, at most limit.
	ScansOf(ctx context.Context, userID, siteID string, limit int) ([]Scan, error)
	// CompletedScans lists a site's complete scans, most recently completed first, at most limit;
	// ErrNotFound when the site is not the user's.
	CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]Scan, error)
	// LatestCompletedScan ignores queued, running and failed scans; ErrNotFound when none.
	LatestCompletedScan(ctx context.Context, userID, siteID string) (Scan, error)
	// PageResults returns a scan's successful results ordered by path then strategy.
	PageResults(ctx context.Context, userID, scanID string) ([]PageResult, error)
	// EachPageResult streams the results PageResults returns, one at a time and with only
	// ExportFields of each, so large scans do not sit in memory nor decode audits the caller
	// does not read (MCP's regression confirmations read Runs; the export reads ExportScan).
	EachPageResult(ctx context.Context, userID, scanID string, fn func(PageResult) error) error
	// PageResult returns one result; ErrNotFound when the pair was not audited or failed.
	PageResult(ctx context.Context, userID, scanID, pagePath string, strategy Strategy) (PageResult, error)
	PageErrors(ctx context.Context, userID, scanID string) ([]PageError, error)
	// PageMetrics returns the results PageResults returns with only PagePath, PageURL,
	// Strategy, Scores and CoreWebVitals filled: what regressions and the worst page need,
	// without reading every audit of a large scan.
	PageMetrics(ctx context.Context, userID, scanID string) ([]PageResult, error)
	// PageMetricsOf is PageMetrics of several scans in one round trip, by scan id: a site's
	// trend reads its last scans' vitals. A scan that is not the user's, does not exist or has no
	// result has no entry.
	PageMetricsOf(ctx context.Context, userID string, scanIDs []string) (map[string][]PageResult, error)
}

// Jobs is the one durable queue every kind of work goes through (scans, digests, and the kinds
// to come). Its methods serve the system. Delivery is at least once, so every write a job makes
// is idempotent. Every write made under a Lease answers ErrLeaseLost, and changes nothing, once the
// job is no longer running under that attempt.
type Jobs interface {
	// EnqueueJob stores a job of args.Kind() with args as JSON, runnable at runAt, and wakes the
	// dispatchers (JobWaker).
	EnqueueJob(ctx context.Context, args JobArgs, runAt time.Time) (Job, error)
	// ClaimJob takes the next runnable job of a kind, marks it running under a new attempt and
	// returns it; ErrNotFound when none is runnable at now. Accounts, then workspaces, take
	// turns: the jobs of the owning accounts (a workspace's oldest owner), then of the workspaces,
	// with the fewest jobs of the kind running (in every process) come first, then the oldest
	// (run_at, id). With perWorkspace > 0 a workspace, or an account across the workspaces it
	// owns, already running that many jobs of the kind under workerID gets none from this worker
	// until one ends, so a process whose workers outnumber perWorkspace always keeps one for
	// other accounts: one account's queues never hold every worker while another's waits, yet a
	// lone workspace still uses every process. A job of no workspace counts as one of a workspace running none.
	ClaimJob(ctx context.Context, kind, workerID string, now time.Time, perWorkspace int) (Job, error)
	// Heartbeat extends the lease.
	Heartbeat(ctx context.Context, l Lease, now time.Time) error
	// CompleteJob marks the job completed. A job its worker already finished under this attempt
	// (CompleteScan, FailScan) answers nil and stays as it is.
	CompleteJob(ctx context.Context, l Lease, now time.Time) error
	// DiscardJob gives the job up with a reason; a scan job's scan fails with it.
	DiscardJob(ctx context.Context, l Lease, reason string, now time.Time) error
	// RetryJob makes the job runnable again at runAt, keeping the reason.
	RetryJob(ctx context.Context, l Lease, runAt time.Time, reason string) error
	// SnoozeJob makes the job runnable again at runAt, keeping the reason, without spending the
	// attempt: for a job put back through no fault of its own (shutdown, PSI unavailable).
	// The attempt is the lease's fencing token and only ever grows, so the next claim still
	// takes a new attempt; max_attempts grows by one instead, and the job keeps its number of
	// real attempts.
	SnoozeJob(ctx context.Context, l Lease, runAt time.Time, reason string) error
	// RescueJobs returns running jobs whose heartbeat is older than staleBefore to the queue,
	// in their place (run_at kept, so ahead of jobs queued after them), or, when they have no
	// attempts left, discards them (failing a scan job's scan).
	RescueJobs(ctx context.Context, staleBefore, now time.Time) (int, error)
	// CleanJobs deletes up to limit completed or discarded jobs finalized before finishedBefore
	// and answers how many.
	CleanJobs(ctx context.Context, finishedBefore time.Time, limit int) (int, error)
	// Job reads a job (system: tests and operations).
	Job(ctx context.Context, id int64) (Job, error)
	// JobFigures counts the live jobs (available or running) by kind and state, ordered by
	// them, each available figure with the run time of its oldest job runnable at now: one
	// cheap read for /metrics.
	JobFigures(ctx context.Context, now time.Time) ([]JobFigure, error)
}

// ScanRecords is the life cycle of a scan, driven by its job (kind KindScan): the writes are
// made under the job's lease. Its methods serve the system.
type ScanRecords interface {
	// EnqueueScan creates a queued scan and its job of kind (KindScan, or KindDemo for a scan
	// no worker runs) in one transaction, the job runnable at runAt. ErrScanActive when the
	// site has a queued or running scan.
	EnqueueScan(ctx context.Context, s Scan, kind string, runAt time.Time) error
	// ScanForJob reads the scan a job works on and its site.
	ScanForJob(ctx context.Context, scanID string) (Scan, Site, error)
	// ScansByID reads scans of any status by id, in one round trip: the budget checks waiting
	// for scans to finish, each authorized when it began to wait, read them all at once. An
	// unknown id (or one that is not a uuid) has no entry.
	ScansByID(ctx context.Context, ids []string) (map[string]Scan, error)
	// StartScan marks the scan running with its number of page/strategy pairs.
	StartScan(ctx context.Context, l Lease, pagesTotal int, now time.Time) error
	// DonePages lists the pairs that already have a result or an error, so a re-run resumes.
	DonePages(ctx context.Context, scanID string) ([]PageKey, error)
	// SavePageResult upserts a result on (scan, path, strategy), replacing an earlier error.
	SavePageResult(ctx context.Context, l Lease, r PageResult) error
	// SavePageError upserts an error for a pair that has no result.
	SavePageError(ctx context.Context, l Lease, e PageError) error
	// SetAuditsInFlight records how many audits of the scan are in flight now, for its page.
	SetAuditsInFlight(ctx context.Context, l Lease, n int) error
	// SetPagesFound records how many pages the scan audits and how many discovery found before
	// MAX_PAGES_PER_SCAN, so its pages can say "50 of 80 pages audited"; it never lowers the
	// found count an enqueue set (the platform's full list at import).
	SetPagesFound(ctx context.Context, l Lease, audited, found int) error
	// CompleteScan marks scan and job done, stores the scores, sets the site's health and
	// enqueues the follow-up jobs then (the digest), runnable at now, in the same transaction:
	// a crash after it loses none of them (River's JobCompleteTx).
	CompleteScan(ctx context.Context, l Lease, scores ScanScores, now time.Time, then ...JobArgs) error
	// FailScan discards the job and marks the scan failed with a reason.
	FailScan(ctx context.Context, l Lease, reason string, now time.Time) error
	// EnqueueDueScans is the scheduler's step, in one transaction: it claims up to limit sites
	// whose next scheduled scan is due at now, skipping those another process is claiming,
	// enqueues a scan of each (trigger schedule, both strategies, kind KindScan) unless one is
	// in flight, and moves its next scan a period ahead (NextScanAt). It returns the scans enqueued.
	EnqueueDueScans(ctx context.Context, now time.Time, limit int) ([]Scan, error)
	// OverdueScans lists the queued and running scans of kind KindScan that started before
	// startedBefore (a scan never started counts from its creation): those past the scan
	// deadline, oldest first, each with its owner and its job's last error.
	OverdueScans(ctx context.Context, startedBefore time.Time) ([]OverdueScan, error)
	// ExpireScan fails an unfinished scan with reason and discards its job, without a lease: a
	// worker still on it loses its lease, and the site is free for its next scan. Results
	// already stored are kept. ErrNotFound when the scan is no longer queued or running.
	ExpireScan(ctx context.Context, scanID, reason string, now time.Time) error
}

// AuditLimits are the daily budgets one audit is taken against.
type AuditLimits struct {
	// Workspace is USER_DAILY_AUDITS: one workspace's audits of a UTC day.
	Workspace int
	// Account is ACCOUNT_AUDIT_SHARE of PSI_DAILY_LIMIT: one account's audits of a UTC day across
	// every workspace it owns, or created that day, so no account spends the key's whole day.
	Account int
	// Day is PSI_DAILY_LIMIT, the key's audits of a UTC day across every account and replica;
	// 0 leaves the day unshared (AdmitAudit). Mark is AUDIT_SHARE_MARK of it, the high-water
	// mark past which what is left is shared among the accounts that audited; Reserve is
	// NEWCOMER_RESERVE of it, kept for accounts that had not audited before the mark; Newcomer
	// is what each of those may take (a first scan's audits: MAX_PAGES_PER_SCAN x 2).
	Day, Mark, Reserve, Newcomer int
	// KeyFree marks an audit that calls no PSI key (the local Lighthouse, a runner): only
	// Workspace applies to it, and it counts against no account nor the key's day, which are the
	// key's budgets (issue 46: a workspace audited on runners is sized by its own budget).
	KeyFree bool
}

// AuditUsage is what a workspace's audits of a UTC day have spent: the workspace's own count,
// and the most that any account its audits count against (its payers) has spent that day.
type AuditUsage struct {
	Workspace int
	Account   int
	// Late is what that most spent payer took past the mark; Key is the audits every account
	// took that day, and Askers how many accounts took one (AdmitAudit's inputs).
	Late, Key, Askers int
}

// AuditLedger counts the daily audits in the database every replica shares: each workspace's
// (USER_DAILY_AUDITS) and each account's across its workspaces. A workspace's audit counts
// against its payers: its owners, and the account that created it on the day it did (even once
// it has left). An account's counts are its own, so they outlive a deleted workspace.
type AuditLedger interface {
	// TakeAudit spends one audit of the workspace's budget and of each of its payers' when the
	// workspace has spent fewer than limits.Workspace and AdmitAudit admits it for every payer
	// that UTC day (under limits.Account, and the key's day shared when limits.Day is set),
	// and answers whether it did: all or nothing, atomic, so
	// concurrent takes from any number of processes never spend past a limit. Counts of days
	// before yesterday are forgotten on the way. ErrNotFound when the workspace does not exist.
	TakeAudit(ctx context.Context, workspaceID string, now time.Time, limits AuditLimits) (bool, error)
	// AuditsTaken answers what the workspace and its most spent payer have spent on now's UTC
	// day, and the key's day (every account's audits, how many accounts took one); nothing for
	// an unknown workspace.
	AuditsTaken(ctx context.Context, workspaceID string, now time.Time) (AuditUsage, error)
}

// MaxPendingAuthRequests is how many unanswered consent pages one user may have open at once.
const MaxPendingAuthRequests = 20

// MaxPlatformStates is how many platform connects one user may have open at once.
const MaxPlatformStates = 5

// OAuth holds the authorization server's clients, pending requests, codes, tokens and consents.
// Its lookups by hash serve the system: the secret itself is the credential.
type OAuth interface {
	CreateClient(ctx context.Context, c OAuthClient) error
	Client(ctx context.Context, clientID string) (OAuthClient, error)
	// SaveMetadataClient stores or updates a client known by its Client ID Metadata Document
	// (its id is the document's https URL), so codes and tokens can name it; a registered
	// client's id is ErrConflict.
	SaveMetadataClient(ctx context.Context, c OAuthClient) error
	// DeleteUnusedClients deletes the clients registered before createdBefore that were never
	// used: no pending request, code, token or consent names them. It answers how many.
	DeleteUnusedClients(ctx context.Context, createdBefore time.Time) (int, error)

	// CreateAuthRequest stores a pending request. It also drops the user's expired requests
	// and, past MaxPendingAuthRequests live ones, the oldest, so one account cannot pile them up.
	CreateAuthRequest(ctx context.Context, r AuthRequest) error
	// TakeAuthRequest deletes and returns an unexpired pending request of a user: a consent
	// is answered once.
	TakeAuthRequest(ctx context.Context, idHash, userID string, now time.Time) (AuthRequest, error)

	CreateCode(ctx context.Context, c AuthCode) error
	Code(ctx context.Context, codeHash string) (AuthCode, error)
	// RedeemCode marks a code used and stores the tokens issued from it in one transaction: of
	// two concurrent redemptions one gets nil and the other ErrConflict; so does any later one,
	// and a failed redemption stores no token, so a code never issues two grants.
	RedeemCode(ctx context.Context, codeHash string, now time.Time, tokens ...OAuthToken) error

	CreateTokens(ctx context.Context, tokens ...OAuthToken) error
	Token(ctx context.Context, tokenHash string) (OAuthToken, error)
	// RotateRefresh marks an unused, unrevoked refresh token used and stores its successors in
	// one transaction; ErrConflict when the token was already used or revoked.
	RotateRefresh(ctx context.Context, oldHash string, now time.Time, successors ...OAuthToken) error
	// RevokeToken revokes one token, and for a refresh token every token of its family.
	RevokeToken(ctx context.Context, tokenHash string, now time.Time) error
	RevokeFamily(ctx context.Context, familyID string, now time.Time) error

	SaveConsent(ctx context.Context, c Consent) error
	// Consents lists a user's connected apps, newest first.
	Consents(ctx context.Context, userID string) ([]Consent, error)
	// RevokeConsent forgets a user's approval of a client and revokes all their tokens.
	RevokeConsent(ctx context.Context, userID, clientID string, now time.Time) error
}

// Reports holds shareable client reports.
type Reports interface {
	CreateReport(ctx context.Context, r Report) error
	// CreateReportWithin is CreateReport for a user holding fewer than max active (unrevoked,
	// unexpired at r.CreatedAt) reports, else ErrLimit; atomic like CreateSiteWithin.
	CreateReportWithin(ctx context.Context, r Report, max int) error
	// ReportByHash finds a report by its token's hash (system: the token is the credential),
	// expired or revoked ones included so the page can answer 410.
	ReportByHash(ctx context.Context, tokenHash string) (Report, error)
	ReportsOf(ctx context.Context, userID string) ([]Report, error)
	RevokeReport(ctx context.Context, userID, reportID string, now time.Time) error
	// ReportScan reads the scan of a report and its site (system: the public report page).
	ReportScan(ctx context.Context, r Report) (Scan, Site, []PageResult, error)
}

// Webhooks keeps the replay guard of the publish webhook, which also makes a one-time notice
// of the web UI single use (keys "notice:<id>").
type Webhooks interface {
	// SeenDelivery records a delivery by a key (the hash of its body or of its event id) and
	// answers whether the same key was already seen after since.
	SeenDelivery(ctx context.Context, bodyHash string, since, now time.Time) (bool, error)
	// ForgetDelivery drops the keys of a delivery whose effect failed, so the platform's retry
	// of it is not taken for a replay.
	ForgetDelivery(ctx context.Context, keys ...string) error
	// RecordPublish keeps what the platform said about a publish, normalized (system: the
	// publish webhook). Its ScanID is empty or a scan of the same site.
	RecordPublish(ctx context.Context, p Publish) error
	// Publishes lists a site's publishes on or after since, oldest first, at most limit (the
	// latest ones when there are more); ErrNotFound when the site is not the user's.
	Publishes(ctx context.Context, userID, siteID string, since time.Time, limit int) ([]Publish, error)
	// PublishesOfScans gives the publish that started each scan, by scan id; a scan not
	// started by a publish, or not the user's, has no entry.
	PublishesOfScans(ctx context.Context, userID string, scanIDs []string) (map[string]Publish, error)
	// EnqueueFollowUp keeps a publish of the site that came while a scan was in flight from
	// being lost (system: the publish webhook, after EnqueueScan answered ErrScanActive): when
	// the scan in flight is still queued (it has looked at no page) it covers the publish;
	// otherwise a KindFollowUp job of the site is enqueued runnable at runAt, unless one is
	// already waiting, which the publish joins: at most one per site, whoever publishes.
	// ErrNotFound for an unknown site.
	EnqueueFollowUp(ctx context.Context, siteID string, runAt time.Time) (FollowUp, error)
}

// Channels are where a workspace's alerts go, and the record of what was sent to each. The
// methods that take a user id serve a member (scoped through the memberships in the query, a
// write needing owner or editor); the others serve the system (the alert jobs, and the Send test
// button once its handler authorized the member) and are scoped to the workspace.
type Channels interface {
	// CreateChannel validates and stores c in c.WorkspaceID; ErrNotFound unless userID is an
	// owner or editor there, ErrLimit past MaxChannelsPerWorkspace.
	CreateChannel(ctx context.Context, userID string, c Channel) error
	// ChannelsIn lists a workspace's channels, oldest first; none for a non-member.
	ChannelsIn(ctx context.Context, userID, workspaceID string) ([]Channel, error)
	// DeleteChannel deletes a channel of the workspace and its deliveries; ErrNotFound unless
	// userID is an owner or editor there.
	DeleteChannel(ctx context.Context, userID, workspaceID, channelID string) error
	// DeliveriesOf lists a channel's deliveries, newest first, at most limit; ErrNotFound when
	// the channel is not of a workspace the user is a member of.
	DeliveriesOf(ctx context.Context, userID, workspaceID, channelID string, limit int) ([]Delivery, error)

	// WorkspaceChannels lists a workspace's channels, oldest first (system: planning alerts).
	WorkspaceChannels(ctx context.Context, workspaceID string) ([]Channel, error)
	// Channel reads a channel of a workspace (system: a delivery, the Send test button).
	Channel(ctx context.Context, workspaceID, channelID string) (Channel, error)
	// RecordDelivery inserts or updates (by channel and event id) a delivery to a channel of
	// the workspace (system); ErrNotFound when the channel is not the workspace's.
	RecordDelivery(ctx context.Context, workspaceID string, d Delivery) error
	// SwapBudgetState sets the budget state a site's latest completed scan left (broken or not)
	// and answers the state before, in one step, so of two scans completing together exactly
	// one sees a transition (system: scan completion). Swapping again for the same scan (its
	// alerts job retried) changes nothing and answers what the first swap answered. The broken
	// state is t.BudgetsBroken; t is kept whole for the sites list (SiteListing.Triage).
	SwapBudgetState(ctx context.Context, siteID, scanID string, t Triage) (was bool, err error)
	// PlanDeliveries stores, in one transaction, a pending delivery per element of ds (by
	// channel and event id) and, for each one new, its job jobs[i] runnable at now: planning a
	// finished scan's alerts again (a retried job) duplicates nothing, and a crash loses none.
	// A delivery whose channel is not the workspace's (deleted since) is skipped (system).
	PlanDeliveries(ctx context.Context, workspaceID string, ds []Delivery, jobs []JobArgs, now time.Time) (planned int, err error)
	// SetChannelFailing marks a channel of the workspace failing since a time, or not failing
	// (nil); a channel already failing keeps its first time (system). turned is true for the one
	// call that found it not failing and marked it: its owners are told once, however many
	// deliveries fail together.
	SetChannelFailing(ctx context.Context, workspaceID, channelID string, since *time.Time) (turned bool, err error)
}

// SessionTouchGranularity is how stale a session's SeenAt may be: a session used again within
// it keeps the earlier time, so a busy browser costs reads, not writes.
const SessionTouchGranularity = time.Minute

// Platform holds connections to the site-builder platform: pending connect states,
// each user's sealed access token, and the sites a verified connection imported.
type Platform interface {
	// CreatePlatformState stores the hash of a connect's OAuth state for a user until expiresAt.
	// It first drops the user's states expired at now and all but the newest
	// MaxPlatformStates-1 live ones (newest by expiry: every state lives as long).
	CreatePlatformState(ctx context.Context, stateHash, userID string, now, expiresAt time.Time) error
	// TakePlatformState deletes a state and answers nil when it was the user's and unexpired;
	// ErrNotFound for a forged, replayed, expired or someone else's state. Expired states of
	// anyone are deleted on the way.
	TakePlatformState(ctx context.Context, stateHash, userID string, now time.Time) error
	// SavePlatformConnection stores or replaces a workspace's connection, enabled.
	SavePlatformConnection(ctx context.Context, c PlatformConnection) error
	// PlatformConnection reads a workspace's connection; ErrNotFound when there is none.
	PlatformConnection(ctx context.Context, workspaceID string) (PlatformConnection, error)
	// DisablePlatformConnection marks a workspace's connection refused by the platform: reconnect.
	DisablePlatformConnection(ctx context.Context, workspaceID string, now time.Time) error
	// DisconnectPlatform forgets a workspace's connection and unlinks every site it imported
	// (platform id, verification, webhook id and applied script cleared); the sites and their
	// history stay.
	DisconnectPlatform(ctx context.Context, workspaceID string) error
	// ImportPlatformSite links platform site s.PlatformSiteID to a site of workspace
	// s.WorkspaceID (s.UserID's personal one when empty) through a verified connection, in one
	// transaction, idempotently: the workspace's site that already has the id (verified or
	// typed by hand) is updated (name, domain, lastPublished, pages) and marked verified;
	// otherwise s is created verified, and another workspace's hand-typed link to the same id
	// is dropped (that site keeps its history). created says which. ErrConflict when another
	// workspace's verified connection holds the platform site; ErrLimit when s would be created
	// and the workspace already has maxSites sites (counted as CreateSiteWithin does).
	ImportPlatformSite(ctx context.Context, s Site, maxSites int) (site Site, created bool, err error)
	// SetPlatformWebhook records the webhook registered for a user's site.
	SetPlatformWebhook(ctx context.Context, userID, siteID, webhookID string) error
	// SetPlatformScript records the beacon script applied to a site's custom code on the
	// platform (nil: removed), for a user who may edit the site; ErrNotFound otherwise.
	SetPlatformScript(ctx context.Context, userID, siteID string, sc *PlatformScript) error
	// SetSitePages replaces the saved pages of a user's site still verified for platformSiteID
	// (system: the scanner's refresh from the platform before a publish's scan); ErrNotFound
	// once a disconnect or another account's import has unlinked it.
	SetSitePages(ctx context.Context, userID, siteID, platformSiteID string, pages []string) error
}

// KeyUseGranularity is how stale an API key's recorded last use may be: a key used again within
// it keeps the earlier time.
const KeyUseGranularity = time.Minute

// credentialKey carries what the request's credential established: its user's id
// (WithUserID), its principal (WithPrincipal) and its scope (WithScope), in one context value.
// Each With copies the nearest value and sets its part, so each part reads as it would from a
// value of its own (the nearest setting wins), while the three reads walk the context once and
// WithPrincipalScope sets two parts with one value.
type credentialKey struct{}

type credential struct {
	userID       string
	principal    Principal
	hasPrincipal bool
	scope        string
}

func credentialFrom(ctx context.Context) credential {
	if c, ok := ctx.Value(credentialKey{}).(*credential); ok {
		return *c
	}
	return credential{}
}

func withCredential(ctx context.Context, c credential) context.Context {
	return context.WithValue(ctx, credentialKey{}, &c)
}

// WithUserID returns a context carrying the authenticated user's id.
func WithUserID(ctx context.Context, userID string) context.Context {
	c := credentialFrom(ctx)
	c.userID = userID
	return withCredential(ctx, c)
}

// UserIDFrom returns the authenticated user's id, or "" when the request has none.
func UserIDFrom(ctx context.Context) string {
	return credentialFrom(ctx).userID
}

// SiteVersionFollower is a store whose process can hold the sites' versions between reads,
// told of every change by the database (Postgres: LISTEN/NOTIFY, store/postgres/versions.go),
// so that a budget check or MCP's latest-scan read of a site it holds sends no statement. The
// memory store needs none: it is one process.
type SiteVersionFollower interface {
	FollowSiteVersions(ctx context.Context, onError func(error)) error
}

// JobWaker is a store that can tell the dispatchers at once when a job is enqueued, by this process
// or any other (Postgres: LISTEN/NOTIFY). A store without it is polled.
type JobWaker interface {
	WakeOnJobs(ctx context.Context, onError func(error)) (<-chan struct{}, error)
}
