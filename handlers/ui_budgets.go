package handlers

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// BudgetStore is what the budgets page edits: a site's budgets and alert rules.
type BudgetStore interface {
	Budgets(ctx context.Context, userID, siteID string) (map[string]store.Budget, error)
	SetBudgets(ctx context.Context, userID, siteID string, budgets map[string]store.Budget) error
	AlertRules(ctx context.Context, userID, siteID string) ([]store.AlertRule, error)
	AddAlertRule(ctx context.Context, userID string, r store.AlertRule) error
	UpdateAlertRule(ctx context.Context, userID string, r store.AlertRule) error
	DeleteAlertRule(ctx context.Context, userID, siteID, ruleID string) error
}

// budgetRow is one metric of the budgets form.
type budgetRow struct {
	Metric, Label, Unit, Hint string
	Value                     string         // as typed, or the stored threshold
	Strategy                  store.Strategy // mobile, desktop or both
	Error                     string
}

func newBudgetRow(metric string) budgetRow {
	m, _ := analysis.Lookup(metric)
	return budgetRow{Metric: metric, Label: m.Label, Unit: m.Unit, Strategy: store.StrategyBoth}
}

// budgetStrategies are the strategies a budget may apply to, in the editor's order.
var budgetStrategies = []store.Strategy{store.StrategyBoth, store.StrategyMobile, store.StrategyDesktop}

// ruleForm is the add-an-alert-rule form.
type ruleForm struct {
	Metric, Operator, Threshold string
	Errors                      map[string]string
}

// budgetsData is the budgets and alert rules page.
type budgetsData struct {
	Site         store.Site
	Budgets      []budgetRow
	BudgetsError bool
	Rules        []store.AlertRule
	Rule         ruleForm
	Metrics      []string
	Strategies   []store.Strategy
}

// budgetMetrics are the names of the metrics a budget or rule may name, scores first.
func budgetMetrics() []string {
	var out []string
	for _, m := range analysis.BudgetMetrics() {
		out = append(out, m.Name)
	}
	return out
}

// parseThreshold validates a threshold for a metric: scores 0-100, CLS 0-10, times 0-600000 ms.
// A time is read as the pages show it: "2.5s", "2.5 s", "2500ms" or "2500 ms", a bare number
// being milliseconds; a bare number under 50 is refused as probably meant in seconds.
func parseThreshold(metric, in string) (float64, string) {
	in = strings.ToLower(strings.Join(strings.Fields(in), ""))
	op, _ := analysis.BudgetMetric(metric)
	timed := op == store.OpMax && metric != "cls"
	scale, unit := 1.0, false
	if timed {
		switch {
		case strings.HasSuffix(in, "ms"):
			in, unit = strings.TrimSuffix(in, "ms"), true
		case strings.HasSuffix(in, "s"):
			in, scale, unit = strings.TrimSuffix(in, "s"), 1000, true
		}
	}
	v, err := strconv.ParseFloat(in, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		if timed {
			return 0, "Enter a time such as 2.5s or 2500ms."
		}
		return 0, "Enter a number."
	}
	v *= scale
	switch {
	case op == store.OpMin && (v < 0 || v > 100):
		return 0, "A score is between 0 and 100."
	case metric == "cls" && (v < 0 || v > 10):
		return 0, "CLS is between 0 and 10, such as 0.1."
	case timed && (v < 0 || v > 600000):
		return 0, "Enter a time between 0 and 600s, such as 2.5s or 2500ms."
	case timed && !unit && v > 0 && v < 50:
		return 0, "Did you mean " + strconv.FormatFloat(v, 'f', -1, 64) + " seconds? Write " + strconv.FormatFloat(v, 'f', -1, 64) + "s, or add ms for milliseconds."
	}
	return v, ""
}

func (s *server) budgetsPage(w http.ResponseWriter, r *http.Request, status int, site store.Site, d budgetsData) {
	uid := visitorFrom(r.Context()).User.ID
	d.Site, d.Metrics, d.Strategies = site, budgetMetrics(), budgetStrategies
	if d.Budgets == nil {
		budgets, err := s.Budgets.Budgets(r.Context(), uid, site.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		for _, m := range d.Metrics {
			row := newBudgetRow(m)
			if b, ok := budgets[m]; ok {
				row.Value, row.Strategy = strconv.FormatFloat(b.Threshold, 'f', -1, 64), b.Strategy
			}
			d.Budgets = append(d.Budgets, row)
		}
	}
	rules, err := s.Budgets.AlertRules(r.Context(), uid, site.ID)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	d.Rules = rules
	if d.Rule.Metric == "" {
		d.Rule.Metric, d.Rule.Operator = "performance", store.OpMin
	}
	s.render(w, r, status, "budgets", page{Title: "Budgets · " + site.Name, Flash: uiFlash(r), Data: d})
}

func (s *server) handleBudgets() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		s.budgetsPage(w, r, http.StatusOK, site, budgetsData{})
	})
}

// handleSaveBudgets replaces the site's budgets with the form's: an empty field means no budget;
// a missing strategy means both.
func (s *server) handleSaveBudgets() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		d := budgetsData{}
		budgets := map[string]store.Budget{}
		for _, m := range budgetMetrics() {
			row := newBudgetRow(m)
			row.Value = strings.TrimSpace(r.PostForm.Get("budget_" + m))
			if st := r.PostForm.Get("strategy_" + m); st != "" {
				row.Strategy = store.Strategy(st)
			}
			switch {
			case !row.Strategy.Valid():
				row.Strategy, row.Error, d.BudgetsError = store.StrategyBoth, "Choose both, mobile or desktop.", true
			case row.Value != "":
				v, msg := parseThreshold(m, row.Value)
				if msg != "" {
					row.Error, d.BudgetsError = msg, true
				} else {
					budgets[m] = store.Budget{Threshold: v, Strategy: row.Strategy}
				}
			}
			d.Budgets = append(d.Budgets, row)
		}
		if d.BudgetsError {
			s.budgetsPage(w, r, http.StatusUnprocessableEntity, site, d)
			return
		}
		uid := visitorFrom(r.Context()).User.ID
		if err := s.Budgets.SetBudgets(r.Context(), uid, site.ID, budgets); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.audit(r.Context(), site.WorkspaceID, store.LogBudgetChanged, site.Name, map[string]string{"siteId": site.ID})
		http.Redirect(w, r, "/sites/"+site.ID+"/budgets?done=budgets-saved", http.StatusSeeOther)
	})
}

func (s *server) handleAddRule() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		f := ruleForm{Metric: r.PostForm.Get("metric"), Operator: r.PostForm.Get("operator"),
			Threshold: strings.TrimSpace(r.PostForm.Get("threshold")), Errors: map[string]string{}}
		if _, ok := analysis.BudgetMetric(f.Metric); !ok {
			f.Errors["metric"] = "Choose a metric from the list."
			f.Metric = ""
		}
		if f.Operator != store.OpMin && f.Operator != store.OpMax {
			f.Errors["operator"] = "Choose “at least” or “at most”."
			f.Operator = ""
		}
		var threshold float64
		if f.Errors["metric"] == "" {
			var msg string
			if threshold, msg = parseThreshold(f.Metric, f.Threshold); msg != "" {
				f.Errors["threshold"] = msg
			}
		} else if f.Threshold == "" {
			f.Errors["threshold"] = "Enter a number."
		}
		if len(f.Errors) > 0 {
			s.budgetsPage(w, r, http.StatusUnprocessableEntity, site, budgetsData{Rule: f})
			return
		}
		uid := visitorFrom(r.Context()).User.ID
		rule := store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: f.Metric, Operator: f.Operator, Threshold: threshold, CreatedAt: s.Now()}
		// The edit form posts the changed rule's id as "replaces": the rule is changed in place.
		// One deleted meanwhile (another tab) is added again, as the user asked for it.
		err := store.ErrNotFound
		if old := store.CanonicalID(r.PostForm.Get("replaces")); store.ValidUUID(old) {
			rule.ID = old
			err = s.Budgets.UpdateAlertRule(r.Context(), uid, rule)
		}
		if errors.Is(err, store.ErrNotFound) {
			rule.ID = store.NewID()
			err = s.Budgets.AddAlertRule(r.Context(), uid, rule)
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		s.audit(r.Context(), site.WorkspaceID, store.LogRuleAdded, site.Name, map[string]string{"siteId": site.ID})
		http.Redirect(w, r, "/sites/"+site.ID+"/budgets?done=rule-added#rules", http.StatusSeeOther)
	})
}

func (s *server) handleDeleteRule() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		uid := visitorFrom(r.Context()).User.ID
		id := store.CanonicalID(r.PathValue("ruleId"))
		err := store.ErrNotFound
		if store.ValidUUID(id) {
			err = s.Budgets.DeleteAlertRule(r.Context(), uid, site.ID, id)
		}
		if err != nil {
			s.error(w, r, err, "That alert rule does not exist or was already deleted.")
			return
		}
		s.audit(r.Context(), site.WorkspaceID, store.LogRuleDeleted, site.Name, map[string]string{"siteId": site.ID})
		http.Redirect(w, r, "/sites/"+site.ID+"/budgets?done=rule-deleted#rules", http.StatusSeeOther)
	})
}
