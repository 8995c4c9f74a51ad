package ci

import (
	"encoding/xml"
	"fmt"
	"strings"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The budget check as a JUnit XML report, the format GitLab, Jenkins and Azure DevOps read test
// results in: one test case per budget and alert rule, failed with the measured value when
// broken, skipped when the scan measured nothing to check; a scan that could not be judged (it
// failed, none completed yet, or it is still running) is one test case in error. The XML is
// written by encoding/xml, which escapes every string a site gave.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitProblem `xml:"skipped"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// junitClass is every test case's classname: reports group the cases under it.
const junitClass = "sitepulse.budgets"

// JUnit writes a verdict as a JUnit report.
func JUnit(v Verdict) ([]byte, error) {
	suite := junitSuite{Name: "SitePulse budgets: " + v.Site, Time: "0"}
	if v.ScannedAt != nil {
		suite.Timestamp = v.ScannedAt.UTC().Format("2006-01-02T15:04:05")
	}
	prop := func(name string, value *string) {
		if value != nil {
			suite.Properties = append(suite.Properties, junitProperty{name, *value})
		}
	}
	prop("site", &v.Site)
	prop("scanId", v.ScanID)
	prop("scanUrl", v.ScanURL)
	prop("commit", v.Commit)
	prop("publishedBy", v.PublishedBy)
	prop("previousScanId", v.PreviousScanID)
	if !v.judged() {
		suite.Cases = append(suite.Cases, junitCase{ClassName: junitClass, Name: "scan judged", Time: "0",
			Error: &junitProblem{Message: deref(v.Reason), Type: "not-judged", Text: deref(v.Reason)}})
	}
	for _, c := range v.checks {
		tc := junitCase{ClassName: junitClass, Name: testName(c), Time: "0"}
		switch {
		case !c.Measured:
			tc.Skipped = &junitProblem{Message: "the scan measured no " + analysis.Label(c.Metric) + " to check" + strategyNote(c.Strategy)}
		case !c.Pass:
			tc.Failure = &junitProblem{Message: checkSentence(c, func(s string) string { return s }, ""), Type: "budget",
				Text: failureText(c, v)}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	return encodeJUnit(suite)
}

// NotYetJUnit is the report of a scan the wait did not see finish: one test case in error.
func NotYetJUnit(siteName string, st ScanStatus) ([]byte, error) {
	msg := fmt.Sprintf("The scan is still %s (%d of %d audits done); ask again to judge it when it completes: %s", st.Status, st.PagesDone, st.PagesTotal, st.URL)
	scanID, url := st.ScanID, st.URL
	suite := junitSuite{Name: "SitePulse budgets: " + siteName, Time: "0",
		Properties: []junitProperty{{"site", siteName}, {"scanId", scanID}, {"scanUrl", url}},
		Cases:      []junitCase{{ClassName: junitClass, Name: "scan judged", Time: "0", Error: &junitProblem{Message: msg, Type: "not-finished", Text: msg}}}}
	return encodeJUnit(suite)
}

func encodeJUnit(suite junitSuite) ([]byte, error) {
	suite.Tests = len(suite.Cases)
	for _, c := range suite.Cases {
		switch {
		case c.Failure != nil:
			suite.Failures++
		case c.Error != nil:
			suite.Errors++
		case c.Skipped != nil:
			suite.Skipped++
		}
	}
	all := junitSuites{Name: "SitePulse budget check", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Skipped: suite.Skipped, Time: "0", Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// testName names a budget's test case the same from one scan to the next, so reports can follow
// it: "Performance ≥ 80", "LCP (mobile) ≤ 2.5 s", "Performance ≤ 40 (alert rule)".
func testName(c analysis.Check) string {
	name := analysis.Label(c.Metric) + strategyNote(c.Strategy) + " " + budgetText(c)
	if c.Rule {
		name += " (alert rule)"
	}
	return name
}

func strategyNote(s store.Strategy) string {
	if s == "" || s == store.StrategyBoth {
		return ""
	}
	return " (" + string(s) + ")"
}

// failureText is a failure's body: the check in plain values, and where to look.
func failureText(c analysis.Check, v Verdict) string {
	lines := []string{
		"metric: " + c.Metric,
		"operator: " + c.Operator,
		fmt.Sprintf("threshold: %g", c.Threshold),
		fmt.Sprintf("actual: %g", c.Actual),
	}
	if c.PagePath != "" {
		lines = append(lines, "page: "+c.PagePath)
	}
	if c.On != "" {
		lines = append(lines, "strategy: "+string(c.On))
	}
	if v.ScanURL != nil {
		lines = append(lines, "scan: "+*v.ScanURL)
	}
	// Why: on each page that regressed since the previous scan (the check's page and strategy
	// when it names them), the cause of the metric's change, when it got worse beyond noise.
	var why []string
	for _, p := range v.pages {
		if x, ok := p.CauseOf(c.Metric); ok && (c.PagePath == "" || p.PagePath == c.PagePath) && (c.On == "" || p.Strategy == c.On) {
			why = append(why, fmt.Sprintf("  %s (%s): %s", p.PagePath, p.Strategy, hedged(x.Sentence, x.Confidence)))
		}
	}
	if len(why) > 0 && v.PreviousScanID != nil {
		lines = append(append(lines, "why, since the previous scan "+*v.PreviousScanID+":"), why...)
	}
	return strings.Join(lines, "\n")
}
