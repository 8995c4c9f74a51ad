// Package memory is the zero-database store.Store: what `go run .` uses without DATABASE_URL,
// and the twin the contract suite (store/storetest) holds to Postgres's answers.
package memory

import (
	"context"
	"sync"
	"time"

	"sitepulse/store"
)

// Store is the in-memory store.Store. One mutex guards everything: it is meant for a laptop and for
// tests, and its answers must equal Postgres's (the contract suite checks that).
type Store struct {
	// Rules are the site rules every site write checks (SCAN_ALLOW_PRIVATE, MAX_PAGES_PER_SCAN);
	// set before use.
	Rules store.SiteRules

	mu         sync.Mutex
	runners    memRunners // runner tokens and leased audits (runners.go)
	users      map[string]store.User
	sessions   map[string]store.Session
	apiKeys    map[string]store.APIKey
	revoked    map[string]bool // api key ids
	sites      map[string]store.Site
	budgets    map[string]map[string]store.Budget
	rules      map[string]store.AlertRule
	scans      map[string]store.Scan
	results    map[string]map[store.PageKey]memResult
	jobs       map[int64]store.Job
	nextJob    int64
	clients    map[string]store.OAuthClient
	requests   map[string]store.AuthRequest
	codes      map[string]store.AuthCode
	tokens     map[string]store.OAuthToken
	consents   map[[2]string]store.Consent
	reports    map[string]store.Report
	deliveries map[string]time.Time
	// deliveriesSwept is when expired deliveries were last dropped (reports.go).
	deliveriesSwept time.Time
	// platform connections (platform.go)
	platformStates map[string]memState
	connections    map[string]store.PlatformConnection
	audits         map[string]map[time.Time]int // audits spent by workspace and UTC day (audits.go)
	accountAudits  map[string]map[time.Time]int // audits spent by account and UTC day (audits.go)
	lateAudits     map[string]map[time.Time]int // of those, the ones taken past the mark (audits.go)
	keyAudits      map[time.Time]keyDay         // every account's audits by UTC day (audits.go)
	logins         map[string]memLogin          // login attempts by account key (logins.go)
	loginsSwept    time.Time
	publishes      []store.Publish          // in the order recorded (publishes.go)
	channels       map[string]store.Channel // alert channels by id (channels.go)
	// channelDeliveries are the alert deliveries, in the order recorded (channels.go); not
	// deliveries, the publish webhook's replay guard.
	channelDeliveries []store.Delivery
	budgetsBroken     map[string]bool // the budget state alerts compare with, by site (channels.go)
	budgetsSwap       map[string]budgetSwap
	triage            map[string]store.Triage // what each site's latest completed scan left (SwapBudgetState)
	// workspaces (workspaces.go)
	workspaces  map[string]store.Workspace
	creators    map[string]string // who made each workspace with CreateWorkspace (it pays for its audits that day)
	members     map[memberKey]store.Member
	invitations map[string]store.Invitation
	securityLog []store.LogEvent // in the order appended (securitylog.go)
	logSeq      int64
	// accountLinks are the e-mailed reset and e-mail change links by token hash (users.go).
	accountLinks map[string]store.AccountLink
	access       map[string]store.SiteAccess // sites' access settings, sealed, by site (access.go)
	wakes        map[chan struct{}]struct{}  // WakeOnJobs' channels (wake.go)
	// CrUX history (crux.go): points, last answers, next refresh by site; made on first use.
	cruxPoints  map[cruxKey]store.FieldPoint
	cruxFetches map[cruxTarget]store.CruxFetch
	cruxNext    map[string]time.Time
	fieldNext   map[string]time.Time // the daily field check's next time by site (crux.go)
	identities  map[identityKey]store.Identity
	ssoRules    map[string]store.WorkspaceSSO      // single sign-on rules by workspace (sso.go)
	beacon      *memBeacon                         // the beacon's keys and figures (beacon.go)
	providers   map[string]store.WorkspaceProvider // workspaces' own OpenID providers (workspace_providers.go)
}

type memResult struct {
	result  *store.PageResult
	explain []byte            // the result's Explain as Postgres keeps it (store.EncodeExplain)
	images  []store.PageImage // its pictures (page_images), Data included
	pinned  bool              // its pictures are kept past the latest two scans (a regression's side)
	err     store.PageError
}

var _ store.Store = (*Store)(nil)

// New returns an empty in-memory store.
func New() *Store {
	return &Store{
		users:          map[string]store.User{},
		sessions:       map[string]store.Session{},
		apiKeys:        map[string]store.APIKey{},
		revoked:        map[string]bool{},
		sites:          map[string]store.Site{},
		access:         map[string]store.SiteAccess{},
		budgets:        map[string]map[string]store.Budget{},
		rules:          map[string]store.AlertRule{},
		scans:          map[string]store.Scan{},
		results:        map[string]map[store.PageKey]memResult{},
		jobs:           map[int64]store.Job{},
		clients:        map[string]store.OAuthClient{},
		requests:       map[string]store.AuthRequest{},
		codes:          map[string]store.AuthCode{},
		tokens:         map[string]store.OAuthToken{},
		audits:         map[string]map[time.Time]int{},
		accountAudits:  map[string]map[time.Time]int{},
		lateAudits:     map[string]map[time.Time]int{},
		keyAudits:      map[time.Time]keyDay{},
		creators:       map[string]string{},
		consents:       map[[2]string]store.Consent{},
		reports:        map[string]store.Report{},
		deliveries:     map[string]time.Time{},
		platformStates: map[string]memState{},
		connections:    map[string]store.PlatformConnection{},
		channels:       map[string]store.Channel{},
		budgetsBroken:  map[string]bool{},
		budgetsSwap:    map[string]budgetSwap{},
		triage:         map[string]store.Triage{},
		workspaces:     map[string]store.Workspace{},
		members:        map[memberKey]store.Member{},
		invitations:    map[string]store.Invitation{},
		accountLinks:   map[string]store.AccountLink{},
	}
}

func (m *Store) Name() string { return "memory" }

func (m *Store) Ping(ctx context.Context) error { return ctx.Err() }

// Ready is Ping: the memory store has no schema to fall behind.
func (m *Store) Ready(ctx context.Context) error { return ctx.Err() }
func (m *Store) Close() error                    { return nil }

func tp(t time.Time) *time.Time { t = store.Now(t); return &t }

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
