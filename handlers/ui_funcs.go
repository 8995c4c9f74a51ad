package handlers

import (
	"html/template"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"sitepulse/handlers/svg"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

func init() {
	for k, v := range uiFuncs {
		templateFuncs[k] = v
	}
}

// uiFuncs are the web UI's template functions, added to templateFuncs.
var uiFuncs = template.FuncMap{
	"metricLabel": analysis.Label,
	// eventName is an alert event type in words ("Budget broken" for budget.broken).
	"eventName": func(t string) string {
		if n, ok := store.EventNames[t]; ok {
			return n
		}
		return t
	},
	// unicodeDomain shows a stored domain as people read it (bücher.de, not xn--bcher-kva.de).
	"unicodeDomain": store.DisplayDomain,
	// metricValue shows a budget, rule or regression value in its metric's unit.
	"metricValue": metricValue,
	// scoreOf reads a scan score by metric name, for loops over metrics.
	"scoreOf": analysis.ScanScoreOf,
	"statusClass": func(status store.ScanStatus) string {
		switch status {
		case store.StatusComplete:
			return "good"
		case store.StatusFailed:
			return "poor"
		case store.StatusRunning:
			return "ni"
		}
		return "none"
	},
	"bytes": func(n float64) string {
		switch {
		case n >= 1<<20:
			return strconv.FormatFloat(n/(1<<20), 'f', 1, 64) + " MB"
		case n >= 1<<10:
			return strconv.FormatFloat(n/(1<<10), 'f', 0, 64) + " KB"
		}
		return strconv.FormatFloat(n, 'f', 0, 64) + " B"
	},
	// ms shows a duration in milliseconds with its unit: "830 ms", "3.0 s".
	"ms": analysis.FormatMs,
	// pagePath is a field page's path ("/pricing"), "the whole site" for the origin.
	"pagePath": analysis.PagePathOf,
	// fptr is a value as the vital functions take it.
	"fptr": func(v float64) *float64 { return &v },
	// plain turns a Lighthouse title into text: "[Learn more](url)" keeps its words, backticks go.
	"plain": func(s string) string {
		s = mdLink.ReplaceAllString(s, "$1")
		return strings.ReplaceAll(s, "`", "")
	},
	"lighthouseText": lighthouseText,
	// sentence shows a reason written in lower case ("no page could be audited") as a sentence.
	"sentence": sentence,
	"triggerLabel": func(t string) string {
		switch t {
		case store.TriggerWebhook:
			return "a publish"
		case store.TriggerManual:
			return "the Scan now button"
		case store.TriggerDemo:
			return "the demo"
		case store.TriggerImport:
			return "the import from the platform"
		case store.TriggerSchedule:
			return "the schedule"
		case store.TriggerAPI:
			return "a CI pipeline (API key)"
		}
		return t
	},
	"list": func(s ...string) []string { return s },
	"has":  func(list []string, s string) bool { return slices.Contains(list, s) },
	// clip shortens a name a platform may have made any length, for a list.
	"clip":      func(s string) string { return truncate(s, store.MaxSiteName) },
	"trimFloat": func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) },
	// What changed (compare.go): a request by its path, a size, a moment, a change of time.
	"requestLabel": func(r analysis.RequestChange) string { return svg.RequestLabel(r.URL, r.ThirdParty, 120) },
	"size":         svg.SizeLabel,
	"at":           func(ms int) string { return analysis.FormatValue("lcp", float64(ms)) },
	"signedMs": func(ms int) string {
		if ms < 0 {
			return "-" + analysis.FormatValue("lcp", float64(-ms))
		}
		return "+" + analysis.FormatValue("lcp", float64(ms))
	},
	"phaseName": func(p string) string { return svg.PhaseNames[p] },
	"lower":     strings.ToLower,
	// when is a moment where a <time> element cannot go (an <option>).
	"when": func(t *time.Time) string {
		if t == nil {
			return "never"
		}
		return formatTime(*t)
	},
	// confidenceMeaning is the title of a cause's confidence tag: what its level means.
	"confidenceMeaning": analysis.ConfidenceMeaning,
}

// metricValue is a budget's, rule's or regression's value in its metric's unit.
func metricValue(metric string, v float64) string { return analysis.BudgetValue(metric, v) }

// mdLink is a Markdown link in a Lighthouse text: its words, then its target.
var mdLink = regexp.MustCompile(`\[([^\]]*)\]\(([^)]*)\)`)

// lighthouseText shows a Lighthouse description: its text escaped with backticks dropped, and its
// "[Learn more](url)" links kept as links to a new tab when they are https (any other target
// keeps only its words). Nothing of the report reaches the page as HTML of its own.
func lighthouseText(s string) template.HTML {
	text := func(s string) string { return template.HTMLEscapeString(strings.ReplaceAll(s, "`", "")) }
	var b strings.Builder
	last := 0
	for _, m := range mdLink.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(text(s[last:m[0]]))
		words, target := s[m[2]:m[3]], s[m[4]:m[5]]
		if u, err := url.Parse(target); err == nil && u.Scheme == "https" && u.Host != "" {
			b.WriteString(`<a href="` + template.HTMLEscapeString(u.String()) + `" rel="noopener noreferrer" target="_blank">` + text(words) + `</a>`)
		} else {
			b.WriteString(text(words))
		}
		last = m[1]
	}
	b.WriteString(text(s[last:]))
	return template.HTML(b.String())
}
