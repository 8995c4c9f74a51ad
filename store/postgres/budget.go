package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

// A budget check reads a site's name, budgets, alert rules, latest completed scan and that
// scan's per-page scores and vitals (MCP's get_latest_scan reads them too, and the domain). Each process keeps what it last read per site with the
// site's budget_version, which the triggers of migration 003 move with every write to any of
// it. A check then costs one statement of two index lookups, the caller's key and the site's
// version (budgetKeySQL, budgetVersionSQL), and loads the inputs (budgetInputsSQL) only when
// the version it holds is not the site's.

// budgetKeySQL authenticates an unrevoked API key by hash ($2), whose maker is still a member of
// its workspace, and finds site $1 in that workspace: no row means no caller (an unknown or
// revoked key, or its maker left); a NULL version means the site is not the key's to read. The
// query is the PL/pgSQL function of migration 026, so Postgres keeps its plan per server
// connection, as the named prepared statement did, through a transaction pooler too.
const budgetKeySQL = `SELECT * FROM budget_key($1, $2)`

// budgetInputsSQL loads site $1 of user $2 with its version, all in one snapshot, so what is
// kept is labelled with the version it was read at. Only the small sub-objects of each stored
// result leave the database. When the site is at version $3, the one the process holds, it
// answers the version alone (the first column true): the caller's one statement either way.
var budgetInputsSQL = `SELECT s.budget_version = $3, s.budget_version, s.workspace_id, s.name, s.domain, c.id, c.status, c.strategy, c.trigger,
	c.pages_total, c.pages_done, c.scores, c.error, c.created_at, c.started_at, c.completed_at, c.summary, c.bytes, c.details_pruned_at,
	CASE WHEN s.budget_version <> $3 THEN
	(SELECT coalesce(json_object_agg(b.metric, json_build_object('threshold', b.threshold, 'strategy', b.strategy)), '{}')
		FROM budgets b WHERE b.site_id = s.id) END,
	CASE WHEN s.budget_version <> $3 THEN
	(SELECT coalesce(json_agg(json_build_object('id', r.id, 'metric', r.metric, 'operator', r.operator,
		'threshold', r.threshold, 'createdAt', r.created_at) ORDER BY r.created_at, r.id), '[]')
		FROM alert_rules r WHERE r.site_id = s.id) END,
	CASE WHEN s.budget_version <> $3 THEN
	(SELECT coalesce(json_agg(json_build_object('pagePath', p.page_path, 'strategy', p.strategy,
		'scores', p.result->'scores', 'coreWebVitals', p.result->'coreWebVitals') ORDER BY p.page_path, p.strategy), '[]')
		FROM page_results p WHERE p.scan_id = c.id AND p.scanned_at = c.created_at AND p.result IS NOT NULL) END
FROM sites s
LEFT JOIN LATERAL (SELECT id, status, strategy, trigger, pages_total, pages_done, scores, error,
	created_at, started_at, completed_at, summary, bytes, details_pruned_at FROM scans WHERE site_id = s.id AND status = 'complete' AND s.budget_version <> $3
	ORDER BY completed_at DESC, id DESC LIMIT 1) c ON TRUE
WHERE s.id = $1 AND ` + readable("s.workspace_id", 2)

// noVersion is a version no site is at (versions start at 0 and grow), for a load of inputs
// the process does not hold.
const noVersion = -1

// noSite is a well-formed id no site has, for a lookup whose site id is malformed.
const noSite = "00000000-0000-0000-0000-000000000000"

func (p *Store) BudgetInputs(ctx context.Context, userID, siteID string) (store.BudgetInputs, error) {
	if !uuidOK(userID, siteID) {
		return store.BudgetInputs{}, store.NotFound("site")
	}
	// One statement: when the process holds the site's inputs, the site's version alone, then
	// the inputs only if the version moved; otherwise the inputs with their version. The version
	// comes with the check that the user is a member of the site's workspace (site_version_of,
	// migration 027: a scalar function whose plan Postgres keeps) unless the process found them
	// a member at the version it holds: a member's departure or role change moves the version of
	// every site of the workspace (migration 058), so the site's version alone (site_version,
	// one index lookup, the budget check's statement) answers it while it has not moved, and
	// the load, which checks the membership again, when it has.
	held, workspace, member := p.budgets.probe(siteID, userID)
	if held != noVersion {
		// As the budget check's probe (BudgetInputsByKey): not cancellable, which spares
		// database/sql's and lib/pq's goroutines watching the context, once a request whose
		// client has gone is refused; and without parameters: the ids are well-formed uuids.
		if err := ctx.Err(); err != nil {
			return store.BudgetInputs{}, err
		}
		var version sql.NullInt64
		var err error
		switch {
		case member && store.PrincipalFrom(ctx).KeyWorkspaceID != "":
			// An API key's read: its maker's membership is already as old as KeyCacheFor
			// (budgetKey, APIKeyByHash), the bound a followed version keeps (versions.go).
			version, err = p.siteVersion(ctx, siteID, workspace)
		case member:
			// A session's or an OAuth token's: a removal is effective on its next request
			// on every replica, so the version is read.
			err = p.db.QueryRowContext(context.WithoutCancel(ctx), versionCall("site_version", siteID, workspace)).Scan(&version)
		default:
			err = p.db.QueryRowContext(context.WithoutCancel(ctx), versionCall("site_version_of", siteID, userID)).Scan(&version)
		}
		if err != nil {
			return store.BudgetInputs{}, pgErr("site", err)
		}
		if !version.Valid {
			return store.BudgetInputs{}, store.NotFound("site")
		}
		if !member || version.Int64 == held { // a member at this version, asked or known
			if in, ok := p.budgets.get(siteID, version.Int64); ok {
				p.budgets.addReader(siteID, version.Int64, userID)
				in.UserID, in.Version = userID, version.Int64
				return in, nil
			}
		}
		held = noVersion // moved (then whether the user is still a member is the load's to ask), or dropped meanwhile: load it
	}
	for {
		in, version, workspace, err := p.loadBudgetInputs(ctx, userID, siteID, held)
		if errors.Is(err, errHeld) {
			if in, ok := p.budgets.get(siteID, version); ok {
				p.budgets.addReader(siteID, version, userID)
				in.UserID, in.Version = userID, version
				return in, nil
			}
			held = noVersion // dropped meanwhile: load it
			continue
		}
		if err != nil {
			return store.BudgetInputs{}, err
		}
		p.budgets.put(siteID, version, workspace, in)
		p.budgets.addReader(siteID, version, userID) // the load found the user a member
		in.UserID, in.Version = userID, version
		return in, nil
	}
}

// versionCall is the statement SELECT fn(a, b) of two ids, each quoted as pq.QuoteLiteral
// quotes it: well-formed lower-case uuids (uuidOK), which QuoteLiteral leaves as they are between
// quotes, are written in the one concatenation, the statement's only allocation.
func versionCall(fn, a, b string) string {
	if uuidOK(a, b) {
		return "SELECT " + fn + "('" + a + "', '" + b + "')"
	}
	return "SELECT " + fn + "(" + pq.QuoteLiteral(a) + ", " + pq.QuoteLiteral(b) + ")"
}

// errHeld is loadBudgetInputs' answer when the site is at the version the process holds.
var errHeld = errors.New("budget inputs held at this version")

func (p *Store) BudgetInputsByKey(ctx context.Context, keyHash, siteID string, now time.Time) (store.BudgetInputs, error) {
	if !uuidOK(siteID) {
		siteID = noSite
	}
	// The statement does not take the request's cancellation: for a cancellable context
	// database/sql and lib/pq each start a goroutine per query to watch it, which cost a tenth
	// of this endpoint's throughput, while a client that goes away saves nothing on two index
	// lookups. A request whose client has already gone does not start it.
	if err := ctx.Err(); err != nil {
		return store.BudgetInputs{}, err
	}
	var version sql.NullInt64
	k, ok := p.budgetKeys.get(keyHash, now)
	if ok { // the key as found less than KeyCacheFor ago: the site's version alone
		// Without parameters: one Query message (the simple protocol, as pgbench -S sends),
		// which a pooler relays more cheaply than Parse, Bind, Describe, Execute and Sync. Both
		// ids are well-formed uuids (uuidOK, and the key's row), quoted all the same.
		var err error
		if version, err = p.siteVersion(ctx, siteID, k.workspaceID); err != nil {
			return store.BudgetInputs{}, pgErr("site", err)
		}
	} else {
		var used sql.NullTime
		if err := p.db.QueryRowContext(context.WithoutCancel(ctx), budgetKeySQL, siteID, keyHash).Scan(&k.id, &k.userID, &used, &version, &k.workspaceID); err != nil {
			return store.BudgetInputs{}, pgErr("api key", err)
		}
		k.used = timePtr(used)
		p.budgetKeys.put(keyHash, k.id, k, now)
	}
	used, err := p.recordKeyUse(ctx, k.id, k.used, now)
	if err != nil {
		return store.BudgetInputs{}, err
	}
	if used != k.used {
		k.used = used
		p.budgetKeys.update(keyHash, k)
	}
	if !version.Valid {
		return store.BudgetInputs{UserID: k.userID}, store.NotFound("site")
	}
	in, err := p.budgetInputs(ctx, k.userID, siteID, version.Int64)
	in.UserID = k.userID
	return in, err
}

// budgetKey is what the budget check keeps of an API key (keyCache).
type budgetKey struct {
	id, userID, workspaceID string
	used                    *time.Time
}

// budgetInputs answers from what this process keeps when it holds the site at version, and
// otherwise loads the inputs and keeps them.
func (p *Store) budgetInputs(ctx context.Context, userID, siteID string, version int64) (store.BudgetInputs, error) {
	if in, ok := p.budgets.get(siteID, version); ok {
		in.UserID, in.Version = userID, version
		return in, nil
	}
	in, version, workspace, err := p.loadBudgetInputs(ctx, userID, siteID, noVersion)
	if err != nil {
		return store.BudgetInputs{}, err
	}
	p.budgets.put(siteID, version, workspace, in)
	p.budgets.addReader(siteID, version, userID)
	in.UserID, in.Version = userID, version
	return in, nil
}

// loadBudgetInputs runs budgetInputsSQL: the inputs, the version they were read at and the
// site's workspace, or errHeld and the version when the site is at version held. Either way
// the user is a member of the workspace at that version.
func (p *Store) loadBudgetInputs(ctx context.Context, userID, siteID string, held int64) (store.BudgetInputs, int64, string, error) {
	var (
		in                                     store.BudgetInputs
		same                                   bool
		version                                int64
		workspace                              string
		id, status, strategy, trigger, scanErr sql.NullString
		total, done                            sql.NullInt64
		created, started, completed, pruned    sql.NullTime
		scores, budgets, rules, results        []byte
		summary                                []byte
		bytes                                  sql.NullInt64
	)
	err := p.db.QueryRowContext(ctx, budgetInputsSQL, siteID, userID, held).Scan(&same, &version, &workspace, &in.SiteName, &in.SiteDomain, &id, &status,
		&strategy, &trigger, &total, &done, &scores, &scanErr, &created, &started, &completed, &summary, &bytes, &pruned, &budgets, &rules, &results)
	if err != nil {
		return in, 0, "", pgErr("site", err)
	}
	if same {
		return in, version, workspace, errHeld
	}
	if err := json.Unmarshal(budgets, &in.Budgets); err != nil {
		return in, 0, "", fmt.Errorf("budgets of site %s: %w", siteID, err)
	}
	if in.Rules, err = decodeRules(siteID, rules); err != nil {
		return in, 0, "", err
	}
	in.Results = []store.PageResult{}
	if !id.Valid {
		return in, version, workspace, nil
	}
	sc := store.Scan{ID: id.String, SiteID: siteID, Status: store.ScanStatus(status.String), Strategy: store.Strategy(strategy.String), Trigger: trigger.String,
		PagesTotal: int(total.Int64), PagesDone: int(done.Int64), Error: scanErr.String, CreatedAt: created.Time.UTC(),
		StartedAt: timePtr(started), CompletedAt: timePtr(completed), Bytes: bytes.Int64, DetailsPrunedAt: timePtr(pruned)}
	if err := json.Unmarshal(scores, &sc.Scores); err != nil {
		return in, 0, "", fmt.Errorf("scan %s scores: %w", sc.ID, err)
	}
	if summary != nil {
		sc.Summary = new(store.ScanSummary)
		if err := json.Unmarshal(summary, sc.Summary); err != nil {
			return in, 0, "", fmt.Errorf("scan %s summary: %w", sc.ID, err)
		}
	}
	in.Scan = &sc
	if err := json.Unmarshal(results, &in.Results); err != nil {
		return in, 0, "", fmt.Errorf("page results of scan %s: %w", sc.ID, err)
	}
	for i := range in.Results {
		in.Results[i].ScanID = sc.ID
	}
	return in, version, workspace, nil
}

// budgetCache keeps, per site, the budget inputs last read and the site's version then. An
// entry answers only for that version, which the caller has just read after checking the
// site's owner, so it never answers for a site its caller does not own nor serves a stale
// read. Entries are shared between checks (BudgetInputs says: read, never modify). It is
// bounded by the page results it holds and starts over when full.
type budgetCache struct {
	mu      sync.Mutex
	entries map[string]budgetEntry
	results int // the page results held, over all entries
}

type budgetEntry struct {
	version   int64
	workspace string // the site's, which it never leaves
	in        store.BudgetInputs
	// readers are users found members of the workspace at this version (BudgetInputs).
	readers []string
}

// budgetCacheResults bounds the page results kept, over all sites: 50,000 take about 19 MB
// (371 bytes each, measured), and are 500 sites of 50 pages, or five of 5,000.
const budgetCacheResults = 50_000

// maxReaders bounds the readers kept per site; a user past it is asked about every time.
const maxReaders = 32

// probe is the version of the inputs held for a site (noVersion when none are), the site's
// workspace, and whether user was found a member of it at that version.
func (c *budgetCache) probe(siteID, userID string) (version int64, workspace string, member bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[siteID]
	if !ok {
		return noVersion, "", false
	}
	return e.version, e.workspace, slices.Contains(e.readers, userID)
}

// addReader records that user was found a member of the site's workspace at version.
func (c *budgetCache) addReader(siteID string, version int64, userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[siteID]
	if !ok || e.version != version || len(e.readers) >= maxReaders || slices.Contains(e.readers, userID) {
		return
	}
	e.readers = append(e.readers[:len(e.readers):len(e.readers)], userID)
	c.entries[siteID] = e
}

func (c *budgetCache) get(siteID string, version int64) (store.BudgetInputs, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[siteID]
	return e.in, ok && e.version == version
}

func (c *budgetCache) put(siteID string, version int64, workspace string, in store.BudgetInputs) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var readers []string
	if old, ok := c.entries[siteID]; ok {
		if old.version > version {
			return // a concurrent check kept a newer read
		}
		if old.version == version {
			readers = old.readers
		}
		c.results -= len(old.in.Results)
	}
	if c.entries == nil || c.results+len(in.Results) > budgetCacheResults {
		c.entries, c.results = map[string]budgetEntry{}, 0
	}
	c.entries[siteID] = budgetEntry{version: version, workspace: workspace, in: in, readers: readers}
	c.results += len(in.Results)
}

// decodeRules reads the alert rules of site siteID from budgetInputsSQL's JSON.
func decodeRules(siteID string, raw []byte) ([]store.AlertRule, error) {
	var rs []struct {
		ID, Metric, Operator string
		Threshold            float64
		CreatedAt            time.Time
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("alert rules of site %s: %w", siteID, err)
	}
	out := make([]store.AlertRule, len(rs))
	for i, r := range rs {
		out[i] = store.AlertRule{ID: r.ID, SiteID: siteID, Metric: r.Metric, Operator: r.Operator, Threshold: r.Threshold, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, nil
}
