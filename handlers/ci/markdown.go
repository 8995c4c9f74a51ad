package ci

import (
	"fmt"
	"strings"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The budget check as GitHub-flavoured Markdown: what `sitepulse check` writes to
// $GITHUB_STEP_SUMMARY and a pipeline may post as a pull request comment. Every string a site
// gave (its name, page paths, who published) goes through mdText, so a site named
// "<img src=x onerror=...>" or "**[click](https://evil)**" shows as those characters.

// mdText escapes s for Markdown text, a table cell included, escaping only what GitHub-flavoured
// Markdown would read as markup, so the file reads as written ("/pricing", "1.2 s", "-37"):
//   - inline markup anywhere: \ ` * _ [ ] < | ~ (emphasis, code, links and images, HTML and
//     autolinks, GFM's table cells and strikethrough) and $ (GitHub's math);
//   - an & that starts an entity ("&amp;"), the "." of "www." and the ":" of "://" (GFM's
//     autolinks), an @ before a name (an e-mail autolink);
//   - what starts a block when the text starts a line (a list item's, a reason's): # > - + =
//     and the "." or ")" of "1." or "1)".
//
// Line breaks, tabs and other control characters become spaces, so nothing ends a line or a
// table row.
func mdText(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i, c := range s {
		switch {
		case c < 0x20 || c == 0x7f || c == 0x85 || c == 0x2028 || c == 0x2029:
			b.WriteByte(' ')
			continue
		case strings.ContainsRune("\\`*_[]<|~$", c),
			c == '&' && entityAt(s[i+1:]),
			c == '.' && strings.HasSuffix(strings.ToLower(s[:i]), "www"),
			c == ':' && strings.HasPrefix(s[i+1:], "//"),
			c == '@' && i > 0 && i+1 < len(s) && isWordByte(s[i+1]),
			i == 0 && strings.ContainsRune("#>-+=", c),
			(c == '.' || c == ')') && i > 0 && strings.TrimLeft(s[:i], "0123456789") == "":
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// entityAt says whether s, the text after an &, makes it an entity or a character reference:
// a name or a number, then ";".
func entityAt(s string) bool {
	s = strings.TrimPrefix(s, "#")
	n := 0
	for n < len(s) && n < 32 && isWordByte(s[n]) && s[n] != '_' {
		n++
	}
	return n > 0 && n < len(s) && s[n] == ';'
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// Markdown writes a verdict: a heading with the outcome, a line naming the scan (linked),
// the commit and who published, the table of scores and checks against their budgets, the
// violations, the regressions since the previous scan with their causes, and a link to the scan.
func Markdown(v Verdict) string {
	var b strings.Builder
	site := mdText(v.Site)
	switch {
	case !v.judged():
		fmt.Fprintf(&b, "### ⚠️ SitePulse could not judge %s\n\n%s\n", site, mdText(deref(v.Reason)))
	case v.Pass:
		fmt.Fprintf(&b, "### ✅ SitePulse: %s meets its budgets\n\n", site)
	default:
		fmt.Fprintf(&b, "### ❌ SitePulse: %s breaks %s\n\n", site, plural(len(v.Violations), "budget"))
	}
	if v.ScanID != nil {
		var line []string
		scan := "Scan " + (*v.ScanID)[:8]
		if v.ScanURL != nil {
			scan = "Scan [" + (*v.ScanID)[:8] + "](" + *v.ScanURL + ")"
		}
		if v.ScannedAt != nil {
			scan += " completed " + (*v.ScannedAt).UTC().Format("2 Jan 2006, 15:04 UTC")
		}
		line = append(line, scan)
		if v.Commit != nil {
			line = append(line, "commit `"+store.ShortCommit(*v.Commit)+"`") // hex, checked on the way in
		}
		if v.PublishedBy != nil {
			line = append(line, "published by "+mdText(*v.PublishedBy))
		}
		b.WriteString(strings.Join(line, " · ") + "\n\n")
	}
	if !v.judged() {
		return b.String()
	}

	b.WriteString("| Metric | Measured | Budget | Result |\n|---|---:|---:|:---:|\n")
	for _, row := range tableRows(v) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", row.metric, row.measured, row.budget, row.result)
	}
	b.WriteString("\n")

	if len(v.Violations) > 0 {
		b.WriteString("#### Budgets broken\n\n")
		for _, c := range v.checks {
			if c.Measured && !c.Pass {
				b.WriteString("- " + checkSentence(c, mdText, "**") + "\n")
			}
		}
		b.WriteString("\n")
	}

	switch {
	case v.PreviousScanID == nil:
		b.WriteString("No earlier completed scan to compare with.\n\n")
	case len(v.Changes) == 0:
		fmt.Fprintf(&b, "No regressions since the previous scan (%s).\n\n", (*v.PreviousScanID)[:8])
	default:
		fmt.Fprintf(&b, "#### %s since the previous scan (%s)\n\n", capitalized(plural(len(v.Changes), "regression")), (*v.PreviousScanID)[:8])
		for _, c := range v.Changes {
			fmt.Fprintf(&b, "- **%s** on %s (%s): %s → %s\n", analysis.Label(c.Metric), mdText(c.PagePath), c.Strategy,
				analysis.BudgetValue(c.Metric, c.From), analysis.BudgetValue(c.Metric, c.To))
			for _, cause := range c.Causes {
				b.WriteString("  - " + mdText(hedged(cause, c.Confidence)) + "\n")
			}
		}
		b.WriteString("\n")
	}
	if v.ScanURL != nil {
		b.WriteString("[Open the scan in SitePulse](" + *v.ScanURL + ")\n")
	}
	return b.String()
}

// NotYetMarkdown says a scan has not finished when the wait ran out.
func NotYetMarkdown(siteName string, st ScanStatus) string {
	return fmt.Sprintf("### ⏳ SitePulse: the scan of %s is still %s\n\n%d of %d audits done. [Follow the scan](%s); ask again to judge it when it completes.\n",
		mdText(siteName), st.Status, st.PagesDone, st.PagesTotal, st.URL)
}

// tableRow is one row of the budget table, each cell already escaped.
type tableRow struct{ metric, measured, budget, result string }

// tableRows are the scan's five scores, each with its budget for both strategies when it has
// one, then every other check: budgets of one strategy, vitals, alert rules.
func tableRows(v Verdict) []tableRow {
	var rows []tableRow
	used := make([]bool, len(v.checks))
	for _, m := range analysis.Metrics {
		if m.Kind != analysis.Score {
			continue
		}
		row := tableRow{metric: m.Label, measured: "–", budget: "–"}
		if s := analysis.ScanScoreOf(*v.Scores, m.Name); s != nil {
			row.measured = fmt.Sprint(*s)
		}
		for i, c := range v.checks {
			if c.Metric == m.Name && !c.Rule && (c.Strategy == "" || c.Strategy == store.StrategyBoth) {
				row.budget, row.result, used[i] = budgetText(c), resultText(c), true
			}
		}
		rows = append(rows, row)
	}
	for i, c := range v.checks {
		if used[i] {
			continue
		}
		row := tableRow{metric: checkLabel(c, mdText), measured: "no data", budget: budgetText(c), result: resultText(c)}
		if c.Measured {
			row.measured = analysis.BudgetValue(c.Metric, c.Actual)
		}
		rows = append(rows, row)
	}
	return rows
}

// checkLabel names a check in the table: "LCP, mobile, worst page /pricing", "Performance
// (alert rule)"; esc escapes the page path for the format.
func checkLabel(c analysis.Check, esc func(string) string) string {
	parts := []string{analysis.Label(c.Metric)}
	if c.Strategy != "" && c.Strategy != store.StrategyBoth {
		parts = append(parts, string(c.Strategy))
	} else if c.On != "" && c.PagePath != "" {
		parts = append(parts, string(c.On))
	}
	if c.PagePath != "" {
		parts = append(parts, "worst page "+esc(c.PagePath))
	}
	label := strings.Join(parts, ", ")
	if c.Rule {
		label += " (alert rule)"
	}
	return label
}

func budgetText(c analysis.Check) string {
	op := "≥"
	if c.Operator == store.OpMax {
		op = "≤"
	}
	return op + " " + analysis.BudgetValue(c.Metric, c.Threshold)
}

func resultText(c analysis.Check) string {
	switch {
	case !c.Measured:
		return "➖ not checked"
	case c.Pass:
		return "✅"
	}
	return "❌"
}

// checkSentence says what a broken check measured: "**LCP** 8.3 s on /pricing (mobile), over the
// maximum of 2.5 s" (bold is strong, the path escaped, for Markdown; JUnit's message is
// checkSentence(c, identity, "")).
func checkSentence(c analysis.Check, esc func(string) string, strong string) string {
	s := strong + analysis.Label(c.Metric) + strong + " " + analysis.BudgetValue(c.Metric, c.Actual)
	if c.PagePath != "" {
		s += " on " + esc(c.PagePath)
	}
	if c.On != "" {
		s += " (" + string(c.On) + ")"
	}
	if c.Operator == store.OpMax {
		s += ", over the maximum of " + analysis.BudgetValue(c.Metric, c.Threshold)
	} else {
		s += ", under the minimum of " + analysis.BudgetValue(c.Metric, c.Threshold)
	}
	if c.Rule {
		s += " (alert rule)"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprint(n, " ", word, "s")
}

func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
