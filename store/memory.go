package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is the in-memory Store. One mutex guards everything: it is meant for a laptop and for
// tests, and its answers must equal Postgres's (the contract suite checks that).
type Memory struct {
	mu         sync.Mutex
	users      map[string]User
	sessions   map[string]Session
	apiKeys    map[string]APIKey
	revoked    map[string]bool // api key ids
	sites      map[string]Site
	budgets    map[string]map[string]Budget
	rules      map[string]AlertRule
	scans      map[string]Scan
	results    map[string]map[PageKey]memResult
	jobs       map[int64]Job
	nextJob    int64
	clients    map[string]OAuthClient
	requests   map[string]AuthRequest
	codes      map[string]AuthCode
	tokens     map[string]OAuthToken
	consents   map[[2]string]Consent
	reports    map[string]Report
	deliveries map[string]time.Time
	// deliveriesSwept is when expired deliveries were last dropped (memory_reports.go).
	deliveriesSwept time.Time
	// platform connections (memory_platform.go)
	platformStates map[string]memState
	connections    map[string]PlatformConnection
	audits         map[string]map[time.Time]int // audits spent by account and UTC day (memory_audits.go)
	logins         map[string]memLogin          // login attempts by account key (memory_logins.go)
	loginsSwept    time.Time
}

type memResult struct {
	result *PageResult
	err    PageError
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		users:          map[string]User{},
		sessions:       map[string]Session{},
		apiKeys:        map[string]APIKey{},
		revoked:        map[string]bool{},
		sites:          map[string]Site{},
		budgets:        map[string]map[string]Budget{},
		rules:          map[string]AlertRule{},
		scans:          map[string]Scan{},
		results:        map[string]map[PageKey]memResult{},
		jobs:           map[int64]Job{},
		clients:        map[string]OAuthClient{},
		requests:       map[string]AuthRequest{},
		codes:          map[string]AuthCode{},
		tokens:         map[string]OAuthToken{},
		audits:         map[string]map[time.Time]int{},
		consents:       map[[2]string]Consent{},
		reports:        map[string]Report{},
		deliveries:     map[string]time.Time{},
		platformStates: map[string]memState{},
		connections:    map[string]PlatformConnection{},
	}
}

func (m *Memory) Name() string { return "memory" }

func (m *Memory) Ping(ctx context.Context) error { return ctx.Err() }
func (m *Memory) Close() error                   { return nil }

func notFound(what string) error { return fmt.Errorf("%s: %w", what, ErrNotFound) }

func tp(t time.Time) *time.Time { t = Now(t); return &t }

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
