package ci

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden/ci")

// Strings a hostile site gives: its name, a page path (a valid one: no space, no #), and who
// published. None may become Markdown or HTML in the formats.
const (
	hostileName = `<img src=x onerror=alert(1)> **Shop** | [click](https://evil.test) www.evil.test <script>alert(2)</script> &amp; ~~x~~`
	hostilePath = `/pricing|<b>x</b>*y*_[z](https://evil.test)]]>`
	hostileBy   = "Eve <script>alert(3)</script> | `rm -rf`"
)

// hostileVerdict is a verdict of real Lighthouse results (testdata/psi against
// testdata/psi-before: real regressions) for a site with a hostile name whose /pricing page
// has a hostile path, with budgets that break, hold and cannot be checked, and an alert rule.
func hostileVerdict(t *testing.T) Verdict {
	t.Helper()
	read := func(dir string) []store.PageResult {
		var out []store.PageResult
		for _, n := range []string{"about.mobile", "about.desktop", "pricing.mobile", "pricing.desktop"} {
			body, err := os.ReadFile("../../testdata/" + dir + "/" + n + ".json")
			must(t, err)
			r, err := lighthouse.ExtractPSI(body)
			must(t, err)
			if r.PagePath == "/pricing" {
				r.PagePath = hostilePath
			}
			out = append(out, r)
		}
		return out
	}
	before, after := read("psi-before"), read("psi")
	scores := analysis.ScanScores(after)
	budgets := map[string]store.Budget{"performance": {Threshold: 80}, "seo": {Threshold: 50}, "lcp": {Threshold: 2500},
		"inp": {Threshold: 200}, "accessibility": {Threshold: 95, Strategy: store.StrategyDesktop}}
	rules := []store.AlertRule{{Metric: "tbt", Operator: store.OpMax, Threshold: 600}}
	scanID, previous := "3a731749-0ec3-4a6b-94a9-33270b5fa797", "1f0c2b9e-5d47-4a1e-9a55-6f4c1d2e8b10"
	url := "https://sitepulse.example.com/sites/9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d/scans/" + scanID
	completed := time.Date(2026, 11, 23, 8, 48, 18, 0, time.UTC)
	status, commit, by := store.StatusComplete, "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b", hostileBy
	v := Verdict{Answer: Answer{Site: hostileName, Scores: &scores, ScanID: &scanID, ScannedAt: &completed,
		Violations: []analysis.Violation{}}, Status: &status, ScanURL: &url, Commit: &commit, PublishedBy: &by, PreviousScanID: &previous,
		checks: analysis.Checks(scores, after, budgets, rules)}
	v.Changes, v.pages = WhatChanged(runPairs(before, after))
	for _, c := range v.checks {
		if c.Measured && !c.Pass {
			v.Violations = append(v.Violations, c.Violation())
		}
	}
	v.Pass = len(v.Violations) == 0
	return v
}

// runPairs pairs the runs of the same page and strategy, as store.Explains.PreviousPairs does.
func runPairs(before, after []store.PageResult) []store.RunPair {
	var out []store.RunPair
	for _, a := range after {
		for _, b := range before {
			if a.PagePath == b.PagePath && a.Strategy == b.Strategy {
				out = append(out, store.RunPair{Before: b, After: a})
			}
		}
	}
	return out
}

// golden compares got with testdata/golden/ci/name, or rewrites it with -update. The .ci
// check (.ci/ci-formats.mjs) renders these files with real consumers.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "../../testdata/golden/ci/" + name
	if *update {
		must(t, os.MkdirAll("../../testdata/golden/ci", 0o755))
		must(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	must(t, err)
	if string(got) != string(want) {
		t.Errorf("%s changed (go test ./handlers/ci -run %s -update to accept):\n%s", path, t.Name(), got)
	}
}

// TestVerdictMarkdown: the GitHub-flavoured Markdown of a hostile site's verdict escapes every
// string the site gave, keeps one table row per line, and has every section.
func TestVerdictMarkdown(t *testing.T) {
	v := hostileVerdict(t)
	md := Markdown(v)
	golden(t, "verdict.md", []byte(md))
	for _, raw := range []string{"<img", "<script", "<b>", "**Shop**", "[click](", "www.evil", "](https://evil", "&amp;", "~~x~~", "`rm"} {
		for i := 0; ; {
			j := strings.Index(md[i:], raw)
			if j < 0 {
				break
			}
			if i+j == 0 || md[i+j-1] != '\\' {
				t.Errorf("the Markdown has %q unescaped", raw)
				break
			}
			i += j + 1
		}
	}
	for _, escaped := range []string{mdText(hostileName), mdText(hostilePath), mdText(hostileBy)} {
		if !strings.Contains(md, escaped) {
			t.Errorf("the Markdown lacks the escaped %q", escaped)
		}
	}
	// Every table line has the header's five unescaped pipes.
	pipe := regexp.MustCompile(`(^|[^\\])\|`)
	rows := 0
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") {
			rows++
			if n := len(pipe.FindAllString(line, -1)); n != 5 {
				t.Errorf("table line with %d cell separators: %s", n, line)
			}
		}
	}
	if want := 1 + 5 + 4; rows != want { // the header, the five scores, then accessibility (desktop), LCP, INP, TBT (rule)
		t.Errorf("%d table lines, want %d:\n%s", rows, want, md)
	}
	// Each regression with its cause, what changed between the two runs (analysis.Compare).
	for _, cause := range []string{"LCP +1.0 s, mostly time to first byte: the document /pricing took 803 ms longer to arrive (server response 89 ms → 901 ms)",
		"Best practices -19: is-on-https now fails (Does not use HTTPS: cdn.widgetly.test/widget.js)"} {
		if !strings.Contains(md, "  - "+mdText(cause)) {
			t.Errorf("the Markdown lacks the cause %q:\n%s", cause, md)
		}
	}
	if strings.Contains(md, "not analysed") {
		t.Errorf("a regression without its cause:\n%s", md)
	}
	for _, section := range []string{"### ❌ SitePulse: ", "#### Budgets broken", "since the previous scan (1f0c2b9e)", "[Open the scan in SitePulse](https://sitepulse.example.com/"} {
		if !strings.Contains(md, section) {
			t.Errorf("no %q in:\n%s", section, md)
		}
	}
}

// TestVerdictJUnit: the JUnit report has one test case per budget and rule, failures with the
// measured value, a skipped case for what the scan did not measure, and the site's strings
// intact once parsed.
func TestVerdictJUnit(t *testing.T) {
	v := hostileVerdict(t)
	b, err := JUnit(v)
	must(t, err)
	golden(t, "verdict.junit.xml", b)
	var got junitSuites
	must(t, xml.Unmarshal(b, &got))
	s := got.Suites[0]
	if s.Name != "SitePulse budgets: "+hostileName || s.Properties[0].Value != hostileName || got.Tests != len(v.checks) || s.Tests != 6 ||
		got.Failures != len(v.Violations) || s.Skipped != 1 || s.Errors != 0 {
		t.Fatalf("report %+v", got)
	}
	names := map[string]junitCase{}
	for _, c := range s.Cases {
		names[c.Name] = c
	}
	lcp := names["LCP ≤ 2.5 s"]
	if lcp.Failure == nil || !strings.Contains(lcp.Failure.Message, "LCP 4.6 s on "+hostilePath+" (mobile), over the maximum of 2.5 s") ||
		!strings.Contains(lcp.Failure.Text, "actual: ") {
		t.Errorf("LCP case %+v", lcp)
	}
	// A failure says why: the cause of the metric's change on its page since the previous scan.
	if !strings.Contains(lcp.Failure.Text, "why, since the previous scan 1f0c2b9e") ||
		!strings.Contains(lcp.Failure.Text, hostilePath+" (mobile): LCP +1.0 s, mostly time to first byte: the document /pricing took 803 ms longer to arrive") {
		t.Errorf("LCP failure text does not say why:\n%s", lcp.Failure.Text)
	}
	if tbt := names["TBT ≤ 600 ms (alert rule)"]; tbt.Failure == nil || !strings.Contains(tbt.Failure.Text, "TBT +2.6 s: new third party widgetly.test") {
		t.Errorf("TBT failure does not say why: %+v", tbt.Failure)
	}
	if c := names["INP ≤ 200 ms"]; c.Skipped == nil || c.Failure != nil {
		t.Errorf("INP case %+v", c)
	}
	if c := names["SEO ≥ 50"]; c.Failure != nil || c.Skipped != nil || c.Error != nil {
		t.Errorf("SEO case %+v", c)
	}
	if c := names["TBT ≤ 600 ms (alert rule)"]; c.Failure == nil {
		t.Errorf("TBT rule case %+v", c)
	}
	if strings.Contains(string(b), "<img") || strings.Contains(string(b), "<script") {
		t.Errorf("the XML carries markup from the site")
	}
}

// TestMDText: what Markdown would read as markup is escaped, and nothing else, so the file
// reads as written: paths, times and causes keep their slashes, dots, dashes and brackets.
func TestMDText(t *testing.T) {
	for in, want := range map[string]string{
		"Shop":            "Shop",
		"a|b":             `a\|b`,
		"<b>x</b>":        `\<b>x\</b>`,
		"line\nbreak\r\t": "line break  ",
		"café ☕":          "café ☕",
		"\u2028x":         " x",
		// Read as written: what only looks like punctuation to a regular expression.
		"/pricing":                 "/pricing",
		"/blog/post-1?ref=a.b#top": "/blog/post-1?ref=a.b#top",
		"Performance -37 (TBT +525 ms, LCP +885 ms): new third party widgetly.test: 1 request, 1.0 s of main-thread work; 81 ms → 901 ms": "Performance -37 (TBT +525 ms, LCP +885 ms): new third party widgetly.test: 1 request, 1.0 s of main-thread work; 81 ms → 901 ms",
		"R&D, 5 > 4, 100%, it's \"quoted\"!": "R&D, 5 > 4, 100%, it's \"quoted\"!",
		// Inline markup, anywhere.
		"**b** _i_ `c` ~~s~~ [l](https://x.test) ![i](y) \\ $m$": "\\*\\*b\\*\\* \\_i\\_ \\`c\\` \\~\\~s\\~\\~ \\[l\\](https\\://x.test) !\\[i\\](y) \\\\ \\$m\\$",
		"&amp; &#60; &x": `\&amp; \&#60; &x`,
		// Autolinks (GFM's www. and scheme://, e-mail addresses).
		"www.evil.test https://evil.test a@b.test": `www\.evil.test https\://evil.test a\@b.test`,
		// What starts a block when the text starts a line (a list item's, the reason's).
		"1. item":  `1\. item`,
		"12) item": `12\) item`,
		"# h":      `\# h`,
		"> q":      `\> q`,
		"- x":      `\- x`,
		"+ x":      `\+ x`,
		"---":      `\---`,
		"=":        `\=`,
	} {
		if got := mdText(in); got != want {
			t.Errorf("mdText(%q) = %q, want %q", in, got, want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestVerdictSaysHowSure: the CI answer says how sure each cause is (issue 42): the JSON's
// changes carry the confidence of their cause; Markdown and JUnit state a high one plainly and
// say "(medium confidence)" or "(low confidence)" after one that is not.
func TestVerdictSaysHowSure(t *testing.T) {
	v := hostileVerdict(t)
	for _, c := range v.Changes {
		x, _ := json.Marshal(c)
		i := slices.IndexFunc(v.pages, func(p analysis.PageChange) bool { return p.PagePath == c.PagePath && p.Strategy == c.Strategy })
		cause, _ := v.pages[i].CauseOf(c.Metric)
		if c.Confidence == "" || c.Confidence != cause.Confidence || !strings.Contains(string(x), `"confidence":"`+c.Confidence+`"`) {
			t.Errorf("the demo's %s regression on %s: %s, want its cause's confidence %q", c.Metric, c.PagePath, x, cause.Confidence)
		}
	}
	// Every cause high but the LCP cause of /pricing (mobile): both formats hedge it, and only it.
	lcp := ""
	for i, p := range v.pages {
		for j, x := range p.Causes {
			v.pages[i].Causes[j].Confidence = analysis.ConfidenceHigh
			if p.PagePath == hostilePath && p.Strategy == store.StrategyMobile && x.Metric == "lcp" {
				v.pages[i].Causes[j].Confidence, lcp = analysis.ConfidenceLow, x.Sentence
			}
		}
	}
	if lcp == "" {
		t.Fatal("no LCP cause on the hostile /pricing (mobile)")
	}
	v.Changes = changesOf(v.pages)
	md := Markdown(v)
	if !strings.Contains(md, "  - "+mdText(lcp+" (low confidence)")+"\n") || strings.Count(md, "confidence") != 1 {
		t.Errorf("the Markdown does not hedge the LCP cause once:\n%s", md)
	}
	b, err := JUnit(v)
	must(t, err)
	var got junitSuites
	must(t, xml.Unmarshal(b, &got))
	for _, c := range got.Suites[0].Cases {
		if c.Name == "LCP ≤ 2.5 s" && (c.Failure == nil || !strings.Contains(c.Failure.Text, hostilePath+" (mobile): "+lcp+" (low confidence)")) {
			t.Errorf("the LCP failure does not hedge its cause: %+v", c.Failure)
		}
	}
	if strings.Count(string(b), "confidence") != 1 {
		t.Errorf("the JUnit hedges more than the LCP cause:\n%s", b)
	}
}
