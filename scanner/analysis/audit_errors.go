package analysis

import "strings"

// DiscoveryNote is the strategy of the one page error a scan records when its page discovery
// stopped at a limit (deadline, byte budget): not an audit, but the scan page's errors are where
// a scan says what went wrong, so the note is told there, beside the audits of what was found.
const DiscoveryNote = "discovery"

// auditCauses turn the error texts an audit leaves (psi.go, lighthouse.go, breaker.go) into what
// happened and what to do, tried in order: a row matches when its text holds every word in
// match. cause follows a subject ("3 audits", "Its audits").
var auditCauses = []struct {
	match       []string
	cause, todo string
}{
	{[]string{"PSI rejected the API key"}, "were refused by PageSpeed Insights (API key rejected)", "check PAGESPEED_API_KEY and that the API is enabled for it"},
	{[]string{"PSI request failed", "no such host"}, "could not reach PageSpeed Insights (DNS lookup failed)", "check the network or PAGESPEED_API_URL"},
	{[]string{"PSI request failed", "connection refused"}, "could not reach PageSpeed Insights (connection refused)", "check the network or PAGESPEED_API_URL"},
	{[]string{"PSI request failed", "certificate"}, "could not reach PageSpeed Insights (TLS certificate not trusted)", "check PAGESPEED_API_URL and the machine's CA certificates"},
	{[]string{"PSI request failed"}, "could not reach PageSpeed Insights (network error)", "check the network or PAGESPEED_API_URL"},
	{[]string{"PSI request could not be built"}, "could not call PageSpeed Insights (the address is not valid)", "check PAGESPEED_API_URL"},
	{[]string{"PSI did not answer within"}, "got no answer from PageSpeed Insights in time", "PSI is slow or overloaded; scan again later"},
	{[]string{"PSI daily quota exhausted"}, "hit the PageSpeed Insights daily quota", "scans resume after midnight Pacific time; set PAGESPEED_API_KEY for a larger quota"},
	{[]string{"PSI_DAILY_LIMIT"}, "hit PSI_DAILY_LIMIT, the daily cap on PageSpeed Insights calls", "scans resume after midnight Pacific time; raise PSI_DAILY_LIMIT for more"},
	{[]string{"PSI quota exceeded"}, "hit the PageSpeed Insights rate limit", "lower PSI_RATE_LIMIT or set PAGESPEED_API_KEY"},
	{[]string{"PSI server error"}, "got server errors from PageSpeed Insights", "it may be down; scan again later"},
	{[]string{"PSI refused the request", "API key"}, "were refused by PageSpeed Insights (API key rejected)", "check PAGESPEED_API_KEY and that the API is enabled for it"},
	{[]string{"PSI refused the request (HTTP 403"}, "were refused by PageSpeed Insights (API key rejected)", "check PAGESPEED_API_KEY and that the API is enabled for it"},
	{[]string{"PSI refused the request"}, "were refused by PageSpeed Insights", "check the page address and PAGESPEED_API_KEY"},
	{[]string{"PSI answered 200 but"}, "got an unreadable answer from PageSpeed Insights", "usually passing; scan again"},
	{[]string{"Lighthouse runtime error"}, "could not be measured by Lighthouse (the page did not load as expected)", "open the page in a browser; the error below names Lighthouse's reason"},
	{[]string{"LIGHTHOUSE_CMD", "not found"}, "could not start Lighthouse (command not found)", "install it as docs/local-lighthouse.md says, or set LIGHTHOUSE_CMD"},
	{[]string{"Lighthouse did not finish within"}, "timed out in Lighthouse", "check the page loads quickly in a browser; scan again"},
	{[]string{"Lighthouse failed"}, "failed in Lighthouse", "check CHROME_PATH and LIGHTHOUSE_CHROME_FLAGS; the error below is Lighthouse's"},
}

// ExplainAuditError says what an audit error text means: the cause, to follow a subject such
// as "3 audits", and what to do. ok is false for a text no row knows.
func ExplainAuditError(raw string) (cause, todo string, ok bool) {
rows:
	for _, c := range auditCauses {
		for _, w := range c.match {
			if !strings.Contains(raw, w) {
				continue rows
			}
		}
		return c.cause, c.todo, true
	}
	return "", "", false
}
