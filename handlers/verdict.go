package handlers

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// verdict is a budget check's answer before a format writes it: the interface's fields
// (budgetCheckResponse), and what a CI pipeline's answer adds beside them. The JSON of a check
// asked with the CI parameters (scanId, waitSeconds, format) carries all of them; a check
// asked as the interface shows stays byte for byte the interface's (handleBudgetCheck).
type verdict struct {
	budgetCheckResponse
	// Status is the judged scan's: complete, or failed (then Reason says why and pass is
	// false); null when the site has no completed scan yet.
	Status *store.ScanStatus `json:"status"`
	// Reason says why there is no verdict on budgets: the scan failed, or there is none yet.
	Reason      *string `json:"reason"`
	ScanURL     *string `json:"scanUrl"`     // the scan's page in the web UI
	Commit      *string `json:"commit"`      // the commit deployed, when the scan's start named one
	PublishedBy *string `json:"publishedBy"` // who published, when its publish named someone
	// PreviousScanID is the scan the changes are measured against: the site's completed scan
	// before this one; null when there is none.
	PreviousScanID *string      `json:"previousScanId"`
	Changes        []scanChange `json:"changes"`

	checks []analysis.Check      // every budget and rule, held or not (the formats' table, JUnit's cases)
	pages  []analysis.PageChange // what changed on each regressed page and strategy (JUnit's failures say why)
	domain string
}

// scanChange is something that got worse since the scan before: a metric of one page
// (analysis.Regressions), with the causes that explain it: one sentence (CauseSentence), and
// how sure it is (analysis.Cause's Confidence; absent when the sentence names no change).
type scanChange struct {
	analysis.Regression
	Causes     []string `json:"causes"`
	Confidence string   `json:"confidence,omitempty"`
}

// judged says whether the verdict judged budgets (a completed scan), not why it could not.
func (v verdict) judged() bool { return v.Status != nil && *v.Status == store.StatusComplete }

// verdictOf judges scan sc of a site (nil: the site has no completed scan) for the user: its
// scores against the site's budgets and rules, and what changed since the scan before it.
func (s *server) verdictOf(ctx context.Context, userID string, site store.Site, sc *store.Scan) (verdict, error) {
	v := verdict{budgetCheckResponse: budgetCheckResponse{Site: site.Name, Violations: []analysis.Violation{}}, Changes: []scanChange{},
		checks: []analysis.Check{}, domain: site.Domain}
	if sc == nil {
		reason := "The site has no completed scan yet."
		v.Reason = &reason
		return v, nil
	}
	status, url, id := sc.Status, s.scanURL(site.ID, sc.ID), sc.ID
	v.Status, v.ScanURL, v.ScanID = &status, &url, &id
	pubs, err := s.CI.PublishesOfScans(ctx, userID, []string{sc.ID})
	if err != nil {
		return v, err
	}
	if p, ok := pubs[sc.ID]; ok {
		if p.Commit != "" {
			v.Commit = &p.Commit
		}
		if p.PublishedBy != "" {
			v.PublishedBy = &p.PublishedBy
		}
	}
	if sc.Status != store.StatusComplete {
		reason := "The scan " + string(sc.Status) + ": " + sc.Error
		if sc.Status != store.StatusFailed {
			reason = "The scan has not completed: it is " + string(sc.Status) + "."
		}
		v.Reason = &reason
		return v, nil
	}
	budgets, err := s.CI.Budgets(ctx, userID, site.ID)
	if err != nil {
		return v, err
	}
	rules, err := s.CI.AlertRules(ctx, userID, site.ID)
	if err != nil {
		return v, err
	}
	results, err := s.CI.PageMetrics(ctx, userID, sc.ID)
	if err != nil {
		return v, err
	}
	// The site's completed scan before this one and the runs both have, with what explains
	// them: the regressions and their causes (analysis.Compare).
	pairs, err := s.CI.PreviousPairs(ctx, userID, sc.ID)
	if err != nil {
		return v, err
	}
	v.checks = analysis.Checks(sc.Scores, results, budgets, rules)
	for _, c := range v.checks {
		if c.Measured && !c.Pass {
			v.Violations = append(v.Violations, c.Violation())
		}
	}
	v.Pass = len(v.Violations) == 0
	v.Scores, v.ScannedAt = &sc.Scores, sc.CompletedAt
	if pairs.From != nil {
		v.PreviousScanID = &pairs.From.ID
		v.Changes, v.pages = whatChanged(pairs.Pairs)
	}
	return v, nil
}

// whatChanged is what got worse between two scans' runs of each page and strategy, in the
// order of analysis.Regressions, each regression with the sentence of its cause: what changed
// between the two runs that explains it (analysis.Compare, the sentence the alerts, the scan
// page and MCP show).
// It also answers the pages' changes themselves.
func whatChanged(pairs []store.RunPair) ([]scanChange, []analysis.PageChange) {
	pages := analysis.RegressedChanges(pairs)
	return scanChanges(pages), pages
}

// scanChanges are the regressions of pages, each with its cause's sentence and confidence.
func scanChanges(pages []analysis.PageChange) []scanChange {
	out := []scanChange{}
	for _, c := range pages {
		for _, r := range c.Regressions {
			cause, _ := c.CauseOf(r.Metric)
			out = append(out, scanChange{Regression: r, Causes: []string{c.CauseSentence(r)}, Confidence: cause.Confidence})
		}
	}
	return out
}

// Formats of the budget check's answer.
const (
	formatJSON     = "json"
	formatMarkdown = "markdown"
	formatJUnit    = "junit"
)

// Content types of the formats: GitHub-flavoured Markdown (RFC 7763, variant from RFC 7764)
// and JUnit's XML.
const (
	markdownType = "text/markdown; charset=utf-8; variant=GFM"
	junitType    = "application/xml; charset=utf-8"
)

// answerFormat is the format a budget check asks for: the format query parameter when given
// (json, markdown, junit; anything else is a 422), else the Accept header's preferred type
// among application/json, text/markdown and application/xml (application/junit+xml and
// text/xml too), JSON when it names none of them. explicit says whether either asked for a
// format at all: a request that did not keeps the interface's JSON exactly.
func answerFormat(r *http.Request) (format string, explicit bool, problem string) {
	accept := r.Header.Get("Accept")
	if r.URL.RawQuery == "" && !strings.Contains(accept, "markdown") && !strings.Contains(accept, "xml") {
		return formatJSON, false, "" // the interface's check, on its hot path: nothing to parse
	}
	if q := r.URL.Query(); q.Has("format") {
		switch f := strings.ToLower(q.Get("format")); f {
		case formatJSON, formatMarkdown, formatJUnit:
			return f, true, ""
		case "md", "gfm":
			return formatMarkdown, true, ""
		case "xml":
			return formatJUnit, true, ""
		}
		return formatJSON, true, "Expected json, markdown or junit"
	}
	best, bestQ := "", 0.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		var f string
		switch mt {
		case "text/markdown", "text/x-markdown":
			f = formatMarkdown
		case "application/xml", "text/xml", "application/junit+xml":
			f = formatJUnit
		case "application/json":
			f = formatJSON
		default:
			continue
		}
		if q > bestQ {
			best, bestQ = f, q
		}
	}
	if best == "" || best == formatJSON {
		return formatJSON, false, ""
	}
	return best, true, ""
}

// hedged is a cause's sentence as the Markdown and JUnit answers give it: a high confidence
// stated plainly, a lower one said after it ("... (low confidence)").
func hedged(sentence, confidence string) string {
	if h := analysis.Hedge(confidence); h != "" {
		return sentence + " (" + h + ")"
	}
	return sentence
}
