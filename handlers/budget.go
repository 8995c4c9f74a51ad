package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"sync"
	"time"

	"sitepulse/handlers/ci"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// APIStore is what the JSON API reads: the budget check's inputs (by API key, in one round trip)
// and a completed scan's results for the export.
type APIStore interface {
	BudgetInputsByKey(ctx context.Context, keyHash, siteID string, now time.Time) (store.BudgetInputs, error)
	BudgetInputs(ctx context.Context, userID, siteID string) (store.BudgetInputs, error)
	// ExportScan streams the export in one statement (store.Reads).
	ExportScan(ctx context.Context, userID, siteID, scanID string, full bool, head func(site store.Site, sc *store.Scan) error, row func(r store.PageResult, previous *store.PageResult) error) error
}

// handleBudgetCheck checks the latest completed scan of a site against its budgets and alert
// rules (interface "POST /api/external/budget-check"). It keeps no state. It takes
// API keys only, like requireBearer(apiKeyOnly), but authenticates itself so that the key and
// everything the check reads come back from one store call (store.BudgetInputsByKey);
// the check is then the shared analysis.CheckBudgets. A failed check is still 200.
//
// As behind requireBearer, a missing, unknown or revoked key gets 401 whatever the body: only
// when the body is bad is the key looked up on its own, before answering 400, 413 or 422.
func (s *server) handleBudgetCheck() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := bearerToken(r)
		if token == "" {
			s.unauthorized(w, apiKeyOnly, "", "missing bearer token: send Authorization: Bearer <key>")
			return
		}
		if !isAPIKey(token) {
			s.bearerFailure(w, r, apiKeyOnly, store.ErrNotFound)
			return
		}
		var req budgetRequest
		err := decodeJSON(r, &req)
		siteID, problem := uuidField(req.SiteID)
		format, explicit, formatProblem := ci.FormatOf(r, req.Format)
		if err == nil && problem == "" && present(req.FieldBudgets) {
			// Field budgets asked for: the check judges real users' p75 too (field_budget.go).
			s.fieldBudgetCheck(w, r, token, siteID, explicit || present(req.ScanID) || present(req.WaitSeconds), req)
			return
		}
		if err == nil && problem == "" && (explicit || present(req.ScanID) || present(req.WaitSeconds)) {
			// A CI pipeline's check: a given scan, a wait, or another format (budget_wait.go).
			s.judgeBudgets(w, r, token, siteID, format, formatProblem, req)
			return
		}
		if err != nil || problem != "" {
			// A bad request from a bad key is a 401 all the same.
			if _, _, kerr := s.verifyBearer(r.Context(), apiKeyOnly, token); kerr != nil {
				s.bearerFailure(w, r, apiKeyOnly, kerr)
				return
			}
			if err != nil {
				writeDecodeError(w, err)
				return
			}
			problems := map[string][]string{"siteId": {problem}}
			if _, _, more := req.validate(formatProblem); len(more) > 0 {
				maps.Copy(problems, more)
			}
			writeValidation(w, problems)
			return
		}
		in, err := s.API.BudgetInputsByKey(r.Context(), store.HashSecret(token), siteID, s.Now())
		switch {
		case errors.Is(err, store.ErrNotFound) && in.UserID == "":
			s.bearerFailure(w, r, apiKeyOnly, err)
			return
		case err != nil:
			s.error(w, r, err, "site not found")
			return
		}
		if err := s.keyInputsGate(r, token); err != nil {
			s.bearerFailure(w, r, apiKeyOnly, err)
			return
		}
		body, ok := s.budgetAnswers.get(siteID, in.Version)
		if !ok {
			resp := ci.Answer{Site: in.SiteName, Violations: []analysis.Violation{}}
			if in.Scan != nil {
				resp.Violations = analysis.CheckBudgets(in.Scan.Scores, in.Results, in.Budgets, in.Rules)
				resp.Pass = len(resp.Violations) == 0
				resp.Scores, resp.ScanID, resp.ScannedAt = &in.Scan.Scores, &in.Scan.ID, in.Scan.CompletedAt
			}
			b, err := json.Marshal(resp)
			if err != nil {
				s.error(w, r, err, "")
				return
			}
			body = append(b, '\n')
			s.budgetAnswers.put(siteID, in.Version, body)
		}
		h := w.Header()
		h["Content-Type"] = jsonContentType
		h["Cache-Control"] = noStoreValue
		w.Write(body)
	})
}

// Header values of the budget check's answer, shared so that a request allocates none.
var (
	jsonContentType = []string{"application/json"}
	noStoreValue    = []string{"no-store"}
)

// budgetAnswers keeps, per site, the encoded answer of its last budget check and the budget
// version of the inputs it was computed from (store.BudgetInputs.Version). The store reads
// that version in the statement that authenticates the caller and checks the site is theirs,
// and it moves with every write the answer depends on (the site's name, budgets, rules and
// latest completed scan), so a kept answer is served only to its owner and never stale: a
// check then costs the statement, a map lookup and one write. Version 0 (a store that keeps no
// versions) is never kept. Bounded by entries; it starts over when full.
type budgetAnswers struct {
	mu      sync.Mutex
	entries map[string]budgetAnswer
}

type budgetAnswer struct {
	version int64
	body    []byte
}

// maxBudgetAnswers bounds the answers kept: a few hundred bytes each.
const maxBudgetAnswers = 10_000

func (c *budgetAnswers) get(siteID string, version int64) ([]byte, bool) {
	if version == 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[siteID]
	return e.body, ok && e.version == version
}

func (c *budgetAnswers) put(siteID string, version int64, body []byte) {
	if version == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[siteID]; ok && old.version > version {
		return // a concurrent check kept a newer answer
	}
	if c.entries == nil || len(c.entries) >= maxBudgetAnswers {
		c.entries = map[string]budgetAnswer{}
	}
	c.entries[siteID] = budgetAnswer{version: version, body: body}
}

// uuidField reads a required uuid from a JSON value: the id in the stores' canonical form, or
// the 422 message for the field.
func uuidField(raw json.RawMessage) (id, problem string) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "Required"
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", "Expected string, a uuid"
	}
	if !store.ValidUUID(s) {
		return "", "Invalid uuid"
	}
	return store.CanonicalID(s), ""
}
