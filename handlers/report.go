package handlers

import (
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The public client report: GET /report/{token}, made by the MCP tool
// generate_client_report. The token is the credential: no login, only its hash is stored; an
// expired or revoked report answers 410. The page is kept out of search engines and caches, and
// its address is never sent on as a referrer.

var ratingWords = map[string]string{analysis.RatingGood: "Good", analysis.RatingNI: "Needs improvement", analysis.RatingPoor: "Poor"}

type reportVital struct {
	Metric, Label, Value, Rating, Class string
}

type reportPage struct {
	Path, URL   string
	Performance *int
	Vitals      []reportVital
}

type reportOpportunity struct {
	Title     string
	SavingsMs float64
	Savings   string
	Pages     int
}

type reportData struct {
	Report   store.Report
	Site     store.Site
	Scan     store.Scan
	Strategy store.Strategy // the strategy of the per-page figures: mobile when the scan has it
	Pages    []reportPage
	Top      []reportOpportunity
	// NameInTitle is true when the title already names the site, so the subtitle does not
	// repeat it.
	NameInTitle bool
}

func (s *server) handleReport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Robots-Tag", "noindex, nofollow")
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		rep, err := s.Reports.ReportByHash(r.Context(), store.HashSecret(r.PathValue("token")))
		if err != nil {
			s.error(w, r, err, "There is no report at this address. Check the link you were sent.")
			return
		}
		if reportState(rep, s.Now()) != "active" {
			s.renderError(w, r, http.StatusGone, "This report has expired. Ask the person who sent it for a new link.")
			return
		}
		scan, site, results, err := s.Reports.ReportScan(r.Context(), rep)
		if errors.Is(err, store.ErrNotFound) { // the site or scan was deleted since
			s.renderError(w, r, http.StatusGone, "The scan behind this report no longer exists.")
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if scan.DetailsPrunedAt != nil {
			s.renderError(w, r, http.StatusGone, prunedMessage(scan)+" Ask the person who sent it for a report of a recent scan.")
			return
		}
		s.render(w, r, http.StatusOK, "report", page{Title: rep.Title, Public: true, Data: buildReport(rep, site, scan, results)})
	})
}

// reportState is a report's standing at now: active, expired or revoked. Only an active report
// is shown.
func reportState(rep store.Report, now time.Time) string {
	switch {
	case rep.RevokedAt != nil:
		return "revoked"
	case rep.ExpiresAt != nil && !now.Before(*rep.ExpiresAt):
		return "expired"
	}
	return "active"
}

// buildReport shapes a scan for people: per page the vitals of one strategy with their web.dev
// ratings, and the opportunities that would save the most time across pages.
func buildReport(rep store.Report, site store.Site, scan store.Scan, results []store.PageResult) reportData {
	d := reportData{Report: rep, Site: site, Scan: scan, Strategy: store.StrategyMobile,
		NameInTitle: strings.Contains(strings.ToLower(rep.Title), strings.ToLower(site.Name))}
	var pool []store.PageResult
	for _, r := range results {
		if r.Strategy == store.StrategyMobile {
			pool = append(pool, r)
		}
	}
	if len(pool) == 0 {
		pool, d.Strategy = results, store.StrategyDesktop
	}
	byTitle := map[string]*reportOpportunity{}
	for _, r := range pool {
		p := reportPage{Path: r.PagePath, URL: r.PageURL, Performance: r.Scores.Performance}
		for _, v := range analysis.BudgetVitals() {
			x := analysis.VitalOf(r.CoreWebVitals, v.Name)
			rv := reportVital{Metric: v.Name, Label: v.Title, Rating: "No data", Class: "none"}
			if x != nil {
				rating := v.Rate(*x)
				rv.Value, rv.Rating, rv.Class = formatVital(v.Name, *x), ratingWords[rating], ratingClass[rating]
			}
			p.Vitals = append(p.Vitals, rv)
		}
		d.Pages = append(d.Pages, p)
		for _, o := range r.Opportunities {
			agg, ok := byTitle[o.Title]
			if !ok {
				agg = &reportOpportunity{Title: o.Title}
				byTitle[o.Title] = agg
			}
			agg.SavingsMs += o.SavingsMs
			agg.Pages++
		}
	}
	for _, o := range byTitle {
		if o.SavingsMs > 0 {
			o.Savings = formatVital("lcp", o.SavingsMs)
			d.Top = append(d.Top, *o)
		}
	}
	sort.Slice(d.Top, func(i, j int) bool {
		if d.Top[i].SavingsMs != d.Top[j].SavingsMs {
			return d.Top[i].SavingsMs > d.Top[j].SavingsMs
		}
		return d.Top[i].Title < d.Top[j].Title
	})
	if len(d.Top) > 8 {
		d.Top = d.Top[:8]
	}
	return d
}
