package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"sitepulse/handlers/ci"
	"sitepulse/oauth"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// fieldBudgetAnswer is the budget check's answer when the request names field budgets: the
// interface's answer, pass also false when real users broke a field budget, and those
// violations. A request without fieldBudgets never reaches it (handleBudgetCheck).
type fieldBudgetAnswer struct {
	ci.Answer
	FieldViolations []analysis.FieldViolation `json:"fieldViolations"`
}

// fieldBudgetCheck answers a budget check that names field budgets ({"lcp": 2500, "inp": 200}:
// the highest p75 of real users on phones allowed, per field metric): the lab's check as the
// interface answers it, and the field's (analysis.CheckFieldBudgets) on the site's latest field
// figures. It is the plain JSON check only: with scanId, waitSeconds or a format it is a 422.
func (s *server) fieldBudgetCheck(w http.ResponseWriter, r *http.Request, token, siteID string, ciParams bool, req budgetRequest) {
	budgets, problem := fieldBudgetsOf(req.FieldBudgets)
	if problem == "" && ciParams {
		problem = "Field budgets are checked by the plain JSON check: leave out scanId, waitSeconds and format"
	}
	if problem != "" {
		if _, _, kerr := s.verifyBearer(r.Context(), apiKeyOnly, token); kerr != nil {
			s.bearerFailure(w, r, apiKeyOnly, kerr)
			return
		}
		writeValidation(w, map[string][]string{"fieldBudgets": {problem}})
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
	resp := fieldBudgetAnswer{Answer: ci.Answer{Site: in.SiteName, Violations: []analysis.Violation{}}}
	if in.Scan != nil {
		resp.Violations = analysis.CheckBudgets(in.Scan.Scores, in.Results, in.Budgets, in.Rules)
		resp.Pass = len(resp.Violations) == 0
		resp.Scores, resp.ScanID, resp.ScannedAt = &in.Scan.Scores, &in.Scan.ID, in.Scan.CompletedAt
	}
	resp.FieldViolations = []analysis.FieldViolation{}
	if s.Field != nil {
		now := s.Now()
		q := store.FieldQuery{Device: store.FieldPhone}
		q.From = now.Add(-store.FieldBeaconSpan)
		beacon, err := s.Field.BeaconSeries(r.Context(), in.UserID, siteID, q)
		if err != nil {
			s.error(w, r, err, "site not found")
			return
		}
		q.From = now.Add(-store.FieldCruxSpan)
		crux, err := s.Field.CruxSeries(r.Context(), in.UserID, siteID, q)
		if err != nil {
			s.error(w, r, err, "site not found")
			return
		}
		resp.FieldViolations = analysis.CheckFieldBudgets(budgets, store.FieldPhone, beacon, crux, analysis.DefaultFieldRule)
	}
	resp.Pass = resp.Pass && len(resp.FieldViolations) == 0
	w.Header().Set("Cache-Control", "no-store")
	oauth.WriteJSON(w, http.StatusOK, resp)
}

// fieldBudgetsOf reads fieldBudgets: an object of field metrics (lcp, inp, cls, fcp, ttfb) to a
// positive maximum p75, or the 422 message.
func fieldBudgetsOf(raw json.RawMessage) (map[string]float64, string) {
	var budgets map[string]float64
	want := "Expected an object of field metrics (" + strings.Join(store.FieldMetrics, ", ") + ") to the highest p75 allowed, a positive number"
	if json.Unmarshal(raw, &budgets) != nil || len(budgets) == 0 {
		return nil, want
	}
	for m, v := range budgets {
		if !isFieldMetric(m) || !(v > 0) {
			return nil, want
		}
	}
	return budgets, ""
}
