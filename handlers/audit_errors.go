package handlers

import (
	"sort"
	"strconv"
	"strings"

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
	for i := range groups {
		groups[i].Sentence = explainAuditError(len(groups[i].Pages), groups[i].Raw)
	}
	return groups
}

// auditCause is one kind of audit failure: how to recognise its error text (every word in
// match), what happened, and what to do.
type auditCause struct {
	match      []string
	what, todo string
}

// auditCauses are tried in order; the texts come from scanner/psi.go and scanner/lighthouse.go.
var auditCauses = []auditCause{
	{[]string{"PSI request failed", "no such host"}, "could not reach PageSpeed Insights (DNS lookup failed)", "check the network or PAGESPEED_API_URL"},
	{[]string{"PSI request failed", "connection refused"}, "could not reach PageSpeed Insights (connection refused)", "check the network or PAGESPEED_API_URL"},
	{[]string{"PSI request failed", "certificate"}, "could not reach PageSpeed Insights (TLS certificate not trusted)", "check PAGESPEED_API_URL and the machine's CA certificates"},
	{[]string{"PSI request failed"}, "could not reach PageSpeed Insights (network error)", "check the network or PAGESPEED_API_URL"},
	{[]string{"PSI request could not be built"}, "could not call PageSpeed Insights (the address is not valid)", "check PAGESPEED_API_URL"},
	{[]string{"PSI did not answer within"}, "got no answer from PageSpeed Insights in time", "PSI is slow or overloaded; scan again later"},
	{[]string{"PSI daily quota exhausted"}, "hit the PageSpeed Insights daily quota", "scans resume after midnight Pacific time; set PAGESPEED_API_KEY for a larger quota"},
	{[]string{"PSI quota exceeded"}, "hit the PageSpeed Insights rate limit", "lower PSI_RATE_LIMIT or set PAGESPEED_API_KEY"},
	{[]string{"PSI server error"}, "got a server error from PageSpeed Insights", "PSI is in trouble; scan again later"},
	{[]string{"PSI refused the request", "API key"}, "were refused by PageSpeed Insights (API key rejected)", "check PAGESPEED_API_KEY and that the API is enabled for it"},
	{[]string{"PSI refused the request"}, "were refused by PageSpeed Insights", "check the page address and PAGESPEED_API_KEY"},
	{[]string{"PSI answered 200 but"}, "got an unreadable answer from PageSpeed Insights", "usually passing; scan again"},
	{[]string{"Lighthouse runtime error"}, "could not be measured by Lighthouse (the page did not load as expected)", "open the page in a browser; the error below names Lighthouse's reason"},
	{[]string{"LIGHTHOUSE_CMD", "not found"}, "could not start Lighthouse (command not found)", "install it as the README's “Local Lighthouse” says, or set LIGHTHOUSE_CMD"},
	{[]string{"Lighthouse did not finish within"}, "timed out in Lighthouse", "check the page loads quickly in a browser; scan again"},
	{[]string{"Lighthouse failed"}, "failed in Lighthouse", "check CHROME_PATH and LIGHTHOUSE_CHROME_FLAGS; the error below is Lighthouse's"},
}

// explainAuditError is the sentence for n audits that failed with raw: "10 audits could not
// reach PageSpeed Insights (DNS lookup failed): check the network or PAGESPEED_API_URL."
func explainAuditError(n int, raw string) string {
	subject := strconv.Itoa(n) + " audits"
	if n == 1 {
		subject = "1 audit"
	}
	for _, c := range auditCauses {
		if containsAll(raw, c.match) {
			return subject + " " + c.what + ": " + c.todo + "."
		}
	}
	return subject + " failed: the error is below."
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}
