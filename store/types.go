package store

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// User is an account holder. Every site, key, token and report belongs to one.
type User struct {
	ID                string
	Email             string
	PasswordHash      string
	NotifyRegressions bool
	CreatedAt         time.Time
	// PasswordChangedAt is when the password was last set: CreatedAt until it is changed or
	// reset. The OAuth grants made since are the ones an intruder may have made (EndGrantsSince).
	PasswordChangedAt time.Time
}

// Session is a signed-in browser. Only the SHA-256 of its cookie value is kept.
type Session struct {
	TokenHash string
	UserID    string
	CSRF      string // synchroniser token for every cookie-authenticated POST
	CreatedAt time.Time
	ExpiresAt time.Time
	SeenAt    time.Time // the last request, to SessionTouchGranularity; CreateSession sets CreatedAt
	// User is the session's user, read by SessionByHash in the same statement (every signed-in
	// request needs both); CreateSession ignores it.
	User User
	// SSOIssuer and SSOSubject name the identity a single sign-on session was made by ("" for
	// a password session); SSOCheckedAt is when the provider last vouched for it (SSO.Vouched).
	SSOIssuer    string
	SSOSubject   string
	SSOCheckedAt time.Time
}

// APIKey is a long-lived `svc_` credential for CI and MCP clients.
type APIKey struct {
	ID     string
	UserID string // who made it; it stops working when they leave the workspace
	// WorkspaceID is the workspace whose sites it reads, as a viewer (and publishes reports).
	WorkspaceID   string
	WorkspaceName string // filled by APIKeys
	Name          string
	KeyHash       string
	Prefix        string // the first characters of the key, shown so a user can tell keys apart
	Scope         string // ScopeRead, or ScopeAll when its creator let it publish reports
	CreatedAt     time.Time
	LastUsedAt    *time.Time
}

// Site is a site connected from the platform.
type Site struct {
	ID     string
	UserID string // who added it, or the workspace's oldest owner once they left it
	// WorkspaceID owns it; empty on creation means the creator's personal workspace.
	WorkspaceID    string
	Name           string
	Domain         string // a host ("example.com", https assumed) or an origin ("http://staging:8080")
	PlatformSiteID string // empty when the site is not connected to the platform
	// PlatformVerified is true when a verified platform connection imported the site; false for
	// a platform id typed by hand before connections existed (and for the demo site).
	PlatformVerified bool
	// PlatformWebhookID is the site_publish webhook SitePulse registered on the platform.
	PlatformWebhookID string
	// PlatformScript is the beacon script SitePulse applied to the site's custom code on the
	// platform; nil when it did not (or removed it).
	PlatformScript *PlatformScript
	Founding       bool
	HealthScore    *int
	LastPublished  *time.Time
	Pages          []string // saved page paths; empty means discover them from the sitemap
	// Schedule is ScheduleOff (scan on publish and on demand only), ScheduleDaily or
	// ScheduleWeekly; NextScanAt is when the next scheduled scan is due, nil when off.
	Schedule   Schedule
	NextScanAt *time.Time
	CreatedAt  time.Time
}

// ScanStatus is where a scan is in its life. Failed extends the interface's three: a scan that
// could not finish. Only the store writes it.
type ScanStatus string

// Scan statuses.
const (
	StatusQueued   ScanStatus = "queued"
	StatusRunning  ScanStatus = "running"
	StatusComplete ScanStatus = "complete"
	StatusFailed   ScanStatus = "failed"
)

// Terminal reports whether a scan in status s has stopped: complete or failed.
func (s ScanStatus) Terminal() bool { return s == StatusComplete || s == StatusFailed }

// Strategy is the device a page is audited as: mobile or desktop, or both for a scan or budget
// that covers the two. Users write it (MCP's tool arguments, checked by their schema's enum;
// the budgets form and the page detail's query, checked by Valid).
type Strategy string

// Strategies.
const (
	StrategyMobile  Strategy = "mobile"
	StrategyDesktop Strategy = "desktop"
	StrategyBoth    Strategy = "both"
)

// Valid reports whether s is one of the three strategies.
func (s Strategy) Valid() bool {
	return s == StrategyMobile || s == StrategyDesktop || s == StrategyBoth
}

// Triggers: what started a scan.
const (
	TriggerWebhook  = "webhook"
	TriggerManual   = "manual"
	TriggerDemo     = "demo"
	TriggerImport   = "import" // the first scan of a site imported from the platform
	TriggerSchedule = "schedule"
	TriggerAPI      = "api" // POST /api/external/scans: a CI pipeline's API key
)

// Scan is one audit of every page of a site.
type Scan struct {
	ID       string
	SiteID   string
	Status   ScanStatus
	Strategy Strategy
	Trigger  string
	// Pages, when not empty, are the page paths this scan audits instead of the site's (a CI
	// pipeline's request: the pages its deploy changed). EnqueueScan keeps them in the scan's
	// job (ScanJob.Pages), where the pipeline reads them; the scan row does not keep them.
	Pages      []string `json:"-"`
	PagesTotal int      // page/strategy pairs to audit; known once discovery ran
	PagesDone  int      // pairs with a result or an error
	// PagesFound is how many pages discovery found (the saved list, the sitemap's or the
	// platform's) before MAX_PAGES_PER_SCAN cut it, and PagesAudited how many of them the scan
	// audits; 0 when not recorded. (PagesTotal counts pairs, and a discovery note.)
	PagesFound   int
	PagesAudited int
	// AuditsInFlight is how many pairs the running attempt is auditing now, as its worker last
	// wrote it (about every second); 0 once the attempt stops auditing.
	AuditsInFlight int
	Scores         ScanScores
	Error          string // why a failed scan failed
	CreatedAt      time.Time
	StartedAt      *time.Time
	CompletedAt    *time.Time
	// Summary is a completed scan's per-strategy scores and worst vitals, written in the
	// transaction that completes it and kept forever (nil before completion).
	Summary *ScanSummary `json:"-"`
	// Bytes is about how much the scan takes in the store (its row, summary and page rows),
	// recorded when it finishes; pruning its page details at DetailsPrunedAt subtracts theirs.
	Bytes           int64      `json:"-"`
	DetailsPrunedAt *time.Time `json:"-"`
}

// PageCount is how many pages the scan audits, each once per strategy: the interface's
// pagesTotal of a completed scan (5 pages scanned on mobile and desktop are 5, not the 10
// audits PagesTotal counts). PagesAudited when recorded, else the audits per strategy.
func (s Scan) PageCount() int {
	switch {
	case s.PagesAudited > 0:
		return s.PagesAudited
	case s.Strategy == StrategyBoth:
		return s.PagesTotal / 2
	}
	return s.PagesTotal
}

// Capped reports that discovery found more pages than the scan audits (MAX_PAGES_PER_SCAN).
func (s Scan) Capped() bool { return s.PagesAudited > 0 && s.PagesFound > s.PagesAudited }

// ScanScores are the rounded means over a scan's page results.
type ScanScores struct {
	Health        *int `json:"health"`
	Performance   *int `json:"performance"`
	SEO           *int `json:"seo"`
	Accessibility *int `json:"accessibility"`
	BestPractices *int `json:"bestPractices"`
}

// PageKey names one audit of a scan.
type PageKey struct {
	PagePath string
	Strategy Strategy
}

// PageError records an audit that failed after its retries.
type PageError struct {
	ScanID   string   `json:"-"`
	PagePath string   `json:"pagePath"`
	PageURL  string   `json:"pageUrl"`
	Strategy Strategy `json:"strategy"`
	Error    string   `json:"error"`
}

// PageResult is the extracted Lighthouse result of one page and strategy. Its JSON is the
// get_page_details payload; the other surfaces show a subset of it.
type PageResult struct {
	ScanID            string   `json:"-"`
	PageURL           string   `json:"pageUrl"`
	PagePath          string   `json:"pagePath"`
	Strategy          Strategy `json:"strategy"`
	LighthouseVersion string   `json:"lighthouseVersion,omitempty"`
	// Runs is how many audits stand behind the result: 1, or 1 + the re-audits of a page that
	// looked regressed, the kept one being their median (REGRESSION_CONFIRM_RUNS).
	Runs                int            `json:"runs"`
	Scores              PageScores     `json:"scores"`
	CoreWebVitals       Vitals         `json:"coreWebVitals"`
	Crux                Crux           `json:"crux"`
	Opportunities       []Opportunity  `json:"opportunities"`
	ThirdPartyScripts   []ThirdParty   `json:"thirdPartyScripts"`
	A11yIssues          []A11yIssue    `json:"a11yIssues"`
	AccessibilityIssues []AuditIssue   `json:"accessibilityIssues"`
	BestPracticesIssues []AuditIssue   `json:"bestPracticesIssues"`
	SEOIssues           []AuditIssue   `json:"seoIssues"`
	LCPElement          *Element       `json:"lcpElement"`
	CLSElements         []CLSElement   `json:"clsElements"`
	Diagnostics         map[string]any `json:"diagnostics"`
	StackPacks          []StackPack    `json:"stackPacks"`
	// BenchmarkIndex is the CPU benchmark index (Lighthouse's environment.benchmarkIndex) of
	// the runner that made the run, and Location its location label; zero and empty for an
	// audit made in-process (docs/runners.md).
	BenchmarkIndex float64 `json:"benchmarkIndex,omitempty"`
	Location       string  `json:"location,omitempty"`
	// Explain is what explains the run (requests, LCP phases, layout shifts, main thread, failing
	// audits), kept beside the result in its compact form and read by the reads that need it
	// (PageResult, the comparisons); nil when a read leaves it out or the result predates it. It
	// is never part of the result's JSON.
	Explain *Explain `json:"-"`
	// Images are the run's distinct screenshots (filmstrip frames and the final screenshot),
	// written with the result into their own table; reads leave them out (Explains reads them).
	Images []PageImage `json:"-"`
	// RegressedFrom is, when the run regressed against the same page of the previous completed
	// scan (analysis.Suspect), that scan's id: SavePageResult then keeps both runs' screenshots
	// past the latest two scans. Empty otherwise; never read back.
	RegressedFrom string `json:"-"`
}

// PageScores are Lighthouse category scores 0-100; nil when Lighthouse gave none.
type PageScores struct {
	Performance   *int `json:"performance"`
	SEO           *int `json:"seo"`
	Accessibility *int `json:"accessibility"`
	BestPractices *int `json:"bestPractices"`
}

// Vitals are lab metrics in milliseconds (CLS unitless); INP is CrUX's p75 because lab runs have none.
type Vitals struct {
	LCP        *float64 `json:"lcp"`
	CLS        *float64 `json:"cls"`
	INP        *float64 `json:"inp"`
	FCP        *float64 `json:"fcp"`
	TTFB       *float64 `json:"ttfb"`
	TBT        *float64 `json:"tbt"`
	SpeedIndex *float64 `json:"speedIndex"`
	TTI        *float64 `json:"tti"`
}

// Crux is the page's own field data (p75); HasCruxData is false when the page has none.
type Crux struct {
	LCP         *float64 `json:"lcp"`
	CLS         *float64 `json:"cls"`
	INP         *float64 `json:"inp"`
	HasCruxData bool     `json:"hasCruxData"`
}

// Opportunity is an audit that would save load time.
type Opportunity struct {
	Title     string  `json:"title"`
	SavingsMs float64 `json:"savingsMs"`
}

// ThirdParty is one third-party entity's cost on a page.
type ThirdParty struct {
	Domain       string  `json:"domain"`
	TransferSize float64 `json:"transferSize"`
	BlockingTime float64 `json:"blockingTime"`
}

// A11yIssue is a failing weighted accessibility audit.
type A11yIssue struct {
	ID    string   `json:"id"`
	Title string   `json:"title"`
	Score *float64 `json:"score"`
}

// AuditIssue is a failing audit of a category, with its explanation.
type AuditIssue struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Description  string   `json:"description"`
	Score        *float64 `json:"score"`
	DisplayValue string   `json:"displayValue,omitempty"`
}

// Element is a DOM node Lighthouse pointed at.
type Element struct {
	Selector  string `json:"selector"`
	Snippet   string `json:"snippet"`
	NodeLabel string `json:"nodeLabel,omitempty"`
}

// CLSElement is a node that shifted, with its share of the layout shift.
type CLSElement struct {
	Selector        string  `json:"selector"`
	Snippet         string  `json:"snippet,omitempty"`
	ClsContribution float64 `json:"clsContribution"`
}

// StackPack is advice Lighthouse gives for a detected stack (WordPress, React, ...).
type StackPack struct {
	ID           string            `json:"id"`
	Title        string            `json:"title"`
	Descriptions map[string]string `json:"descriptions"`
}

// Operators of budget violations and alert rules.
const (
	OpMin = "min"
	OpMax = "max"
)

// Budget is a site's threshold for one metric and the strategy it applies to: StrategyMobile or
// StrategyDesktop checks only that strategy's results, StrategyBoth (the default) the scan's
// score for scores and the worst page, on mobile when the scan has mobile results, for vitals.
type Budget struct {
	Threshold float64  `json:"threshold"`
	Strategy  Strategy `json:"strategy"`
}

// WithDefault stores a budget without a strategy as applying to both.
func (b Budget) WithDefault() Budget {
	if b.Strategy == "" {
		b.Strategy = StrategyBoth
	}
	return b
}

// AlertRule is an explicit threshold a site's latest scan is checked against, like a budget.
type AlertRule struct {
	ID        string
	SiteID    string
	Metric    string
	Operator  string
	Threshold float64
	CreatedAt time.Time
}

// Job is a unit of queued work: its Kind names the worker that runs it and Args is the JSON that
// worker reads (River's JobArgs). ScanID is the scan a scan job runs (EnqueueScan sets it, whatever
// the kind's name; its args are {"scanId": ...} too): giving the job up fails that scan. It is
// empty for other jobs, whose args may still name a scan: a digest is not its scan's job.
type Job struct {
	ID     int64
	Kind   string
	Args   json.RawMessage
	ScanID string
	// WorkspaceID is the workspace the job works for (WorkspaceOf its args; a scan's site's):
	// the claim shares the workers between workspaces by it. Empty for jobs of no workspace.
	WorkspaceID string
	State       JobState
	Attempt     int
	MaxAttempts int
	// Snoozed is how many times SnoozeJob put the job back (see Snoozes).
	Snoozed     int
	RunAt       time.Time
	HeartbeatAt *time.Time
	LockedBy    string
	LastError   string
	CreatedAt   time.Time
	// FinalizedAt is when the job was completed or discarded; the cleaner deletes it a week later.
	FinalizedAt *time.Time
}

// JobArgs is what a job carries: Kind names its worker, and the value is stored as JSON.
type JobArgs interface {
	Kind() string
}

// MaxAttemptsOf is how many attempts a job of args gets: MaxAttempts, unless args asks for more
// with a MaxAttempts() method (a digest outlasts an SMTP outage).
func MaxAttemptsOf(args any) int {
	if a, ok := args.(interface{ MaxAttempts() int }); ok && a.MaxAttempts() > 0 {
		return a.MaxAttempts()
	}
	return MaxAttempts
}

// WorkspaceOf is the workspace a job of args works for, when args says so with a Workspace()
// method (an alert delivery: its channel's workspace); "" otherwise. A scan job's workspace is
// its site's, which the store reads itself.
func WorkspaceOf(args any) string {
	if a, ok := args.(interface{ Workspace() string }); ok {
		return a.Workspace()
	}
	return ""
}

// ScanJob is the args of the job that runs a scan: the scan, and the pages it audits instead of
// the site's when it was started with some (Scan.Pages).
type ScanJob struct {
	ScanID string   `json:"scanId"`
	Pages  []string `json:"pages,omitempty"`
}

// Kind is KindScan.
func (ScanJob) Kind() string { return KindScan }

// Snoozes is how many times the job was put back by SnoozeJob: each one raised MaxAttempts by
// one without spending an attempt. Attempt - Snoozes is the number of real attempts made.
func (j Job) Snoozes() int { return j.Snoozed }

// ScanWait says why an unfinished scan is waiting for its next attempt: its job was put back
// (a retry after a failed attempt, a snooze while PSI is unavailable, a release at shutdown)
// with Reason, to run again at RunAt. The zero value: the scan is not waiting.
type ScanWait struct {
	Reason string
	RunAt  time.Time
}

// OverdueScan is an unfinished scan past the scan deadline, with what its reason is made of.
type OverdueScan struct {
	Scan
	UserID    string // the site's owner, to read the scan's page errors
	LastError string // the last error of its job: why its last attempt was put back
}

// JobFigure is how many live jobs of a kind are in a state (JobFigures).
type JobFigure struct {
	Kind  string
	State JobState
	Jobs  int
	// OldestRunnable is the run time of the oldest available job that could run now (zero:
	// none): how long work has waited for a worker.
	OldestRunnable time.Time
}

// JobState is where a job is in the queue. Only the store writes it.
type JobState string

// Job states.
const (
	JobAvailable JobState = "available"
	JobRunning   JobState = "running"
	JobCompleted JobState = "completed"
	JobDiscarded JobState = "discarded"
)

// Job kinds the store itself knows: the scans'. A scan job of KindScan is claimed by the pool;
// demo scans are recorded as KindDemo, which no worker is registered for, so that no worker ever
// audits them. Other kinds (the digest, ...) belong to the packages that run them.
const (
	KindScan = "scan"
	KindDemo = "demo"
)

// KindAlerts is the job that plans a finished scan's alerts (notify's worker). Whichever way a
// scan fails (its pipeline, its worker giving up, the rescuer, the deadline), the store enqueues
// one in the transaction that fails it, so scan.failed is never lost; a completed scan's comes
// with CompleteScan's follow-up jobs.
const KindAlerts = "alerts"

// AlertsJob is the args of a KindAlerts job.
type AlertsJob struct {
	ScanID string `json:"scanId"`
}

func (AlertsJob) Kind() string { return KindAlerts }

// MaxAttempts: planning outlasts a short database outage, as the digest does.
func (AlertsJob) MaxAttempts() int { return 10 }

// Lease is a worker's claim on a job. Writes made under a lease are ignored once the lease is
// lost (the job was rescued and claimed again, so the attempt moved on).
type Lease struct {
	JobID   int64
	Attempt int
	ScanID  string
}

// Lease returns the lease a claim gave the caller.
func (j Job) Lease() Lease { return Lease{JobID: j.ID, Attempt: j.Attempt, ScanID: j.ScanID} }

// OAuthClient is a dynamically registered client (RFC 7591).
type OAuthClient struct {
	ID           string // c_...
	Name         string
	RedirectURIs []string
	GrantTypes   []string
	AuthMethod   string // none or client_secret_post
	SecretHash   string // empty for public clients
	Scope        string
	CreatedAt    time.Time
}

// IsMetadataClientID answers whether a client id is the https URL of a Client ID Metadata
// Document rather than an id this server issued (c_...) at registration.
func IsMetadataClientID(id string) bool { return strings.HasPrefix(id, "https://") }

// AuthRequest is a validated authorize request waiting for the user's consent. The consent form
// carries only its id; the server's copy wins over anything the browser sends.
type AuthRequest struct {
	IDHash        string
	UserID        string
	ClientID      string
	RedirectURI   string
	State         string
	CodeChallenge string
	Scope         string
	Resource      string
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// AuthCode is an issued authorization code. FamilyID names the grant: every token issued from
// the code, and every rotation after, shares it, so a reused code or refresh token revokes them all.
type AuthCode struct {
	CodeHash      string
	ClientID      string
	UserID        string
	RedirectURI   string
	CodeChallenge string
	Scope         string
	Resource      string
	FamilyID      string
	CreatedAt     time.Time
	ExpiresAt     time.Time
	UsedAt        *time.Time
}

// Token kinds.
const (
	TokenAccess  = "access"
	TokenRefresh = "refresh"
)

// OAuthToken is an issued access or refresh token.
type OAuthToken struct {
	TokenHash string
	Kind      string
	ClientID  string
	UserID    string
	FamilyID  string
	Scope     string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time // a refresh token is used once, when it is rotated
	RevokedAt *time.Time
}

// Consent is a user's approval of a client, listed under "Connected apps".
type Consent struct {
	UserID     string
	ClientID   string
	ClientName string
	Scope      string
	CreatedAt  time.Time
}

// Report is a shareable, login-free page of one scan.
type Report struct {
	ID        string
	TokenHash string
	// TokenSealed is the token sealed for the report's id (platform.Keys.SealReportLink), so
	// its link can be shown again; "" when it was made without a key (or before migration 033).
	TokenSealed string
	ScanID      string
	SiteID      string // the scan's site: filled by reads, ignored by CreateReport
	UserID      string // who made it
	// WorkspaceID owns it: the scan's site's workspace, set by CreateReport.
	WorkspaceID string
	Title       string
	CreatedAt   time.Time
	ExpiresAt   *time.Time // nil: never expires
	RevokedAt   *time.Time
}

// PlatformConnection is a workspace's connection to the site-builder platform. The access token is
// kept only sealed (AES-GCM, see package platform); Disabled is set when the platform refused
// it (revoked there): the user must reconnect.
type PlatformConnection struct {
	WorkspaceID string
	TokenSealed string
	// Scopes are what the platform granted the token; none for a connection made before they
	// were recorded.
	Scopes     []string
	DisabledAt *time.Time
	CreatedAt  time.Time
}

// Granted reports whether the connection's token was granted every one of scopes.
func (c PlatformConnection) Granted(scopes ...string) bool {
	for _, want := range scopes {
		if !slices.Contains(c.Scopes, want) {
			return false
		}
	}
	return true
}

// PlatformScript is a script registered on the platform and applied to a site's custom code:
// its id and version there, and when SitePulse applied it.
type PlatformScript struct {
	ID        string
	Version   string
	AppliedAt time.Time
}
