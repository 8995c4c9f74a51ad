package handlers

import (
	"sort"
	"strconv"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// errorGroup is the audits of a scan that failed with the same error, told once: a sentence
// with the count, the cause and what to do, and the raw text and pages for a details toggle.
type errorGroup struct {
	Sentence string
	Raw      string
	Pages    []store.PageError
}

// groupAuditErrors groups a scan's failed audits by their error text, the largest group first.
func groupAuditErrors(errs []store.PageError) []errorGroup {
	var groups []errorGroup
	at := map[string]int{}
	for _, e := range errs {
		i, ok := at[e.Error]
		if !ok {
			i = len(groups)
			at[e.Error] = i
			groups = append(groups, errorGroup{Raw: e.Error})
		}
		groups[i].Pages = append(groups[i].Pages, e)
	}
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].Pages) > len(groups[j].Pages) })
	for i, g := range groups {
		groups[i].Sentence = explainAuditError(len(g.Pages), g.Raw)
		if g.Pages[0].Strategy == analysis.DiscoveryNote { // a note of the scan, not an audit
			groups[i].Sentence = "The scan audited fewer pages than its sitemap lists: " + g.Raw + "."
		}
	}
	return groups
}

// explainAuditError is the sentence for n audits that failed with raw: "10 audits could not
// reach PageSpeed Insights (DNS lookup failed): check the network or PAGESPEED_API_URL."
func explainAuditError(n int, raw string) string {
	subject := strconv.Itoa(n) + " audits"
	if n == 1 {
		subject = "1 audit"
	}
	if cause, todo, ok := analysis.ExplainAuditError(raw); ok {
		return subject + " " + cause + ": " + todo + "."
	}
	return subject + " failed: the error is below."
}
