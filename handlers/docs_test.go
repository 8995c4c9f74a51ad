package handlers

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMCPDocsExampleIsARealAnswer: the get_trend example on /docs/mcp says what the tool answers
// for the demo site (issue 43: it showed "pagesTotal": 10 where the tool answers 5, a page
// audited on mobile and desktop counting once): each key of the example's structuredContent and
// of its scans is one the real answer has, and each number the example shows is the real one.
func TestMCPDocsExampleIsARealAnswer(t *testing.T) {
	ms := newMCPServer(t)
	resp, body := ms.do(t, "POST", ms.demo.APIKey, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_trend","arguments":{"siteId":"`+
		ms.demo.SiteID+`","limit":1}}}`, map[string]string{"MCP-Protocol-Version": "2025-06-18"})
	if resp.StatusCode != 200 {
		t.Fatalf("get_trend: %d %s", resp.StatusCode, body)
	}
	var answer struct {
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		t.Fatal(err)
	}
	real := answer.Result.StructuredContent
	scans, _ := real["scans"].([]any)
	if len(scans) != 1 {
		t.Fatalf("get_trend answered %v", real)
	}
	realScan := scans[0].(map[string]any)

	docs, err := ms.Client().Get(ms.URL + "/docs/mcp")
	if err != nil {
		t.Fatal(err)
	}
	page := readBody(t, docs)
	_, example, ok := strings.Cut(page, `"structuredContent": `)
	example, _, ok2 := strings.Cut(example, "</pre>")
	if !ok || !ok2 {
		t.Fatal("/docs/mcp shows no structuredContent example")
	}
	example = strings.TrimSuffix(strings.TrimSpace(html.UnescapeString(example)), "}")
	// The example elides ids and lists with "…": make it JSON to read its keys and numbers.
	example = regexp.MustCompile(`\[…\]|"…"`).ReplaceAllString(example, `null`)
	var shown map[string]any
	if err := json.Unmarshal([]byte(example), &shown); err != nil {
		t.Fatalf("the example on /docs/mcp is not JSON once its ellipses are read as null: %v\n%s", err, example)
	}
	for k := range shown {
		if _, ok := real[k]; !ok {
			t.Errorf("/docs/mcp shows %q, which get_trend does not answer", k)
		}
	}
	shownScans, _ := shown["scans"].([]any)
	if len(shownScans) != 1 {
		t.Fatalf("the example shows scans %v", shown["scans"])
	}
	for k, v := range shownScans[0].(map[string]any) {
		got, ok := realScan[k]
		switch {
		case !ok:
			t.Errorf("/docs/mcp shows scans[].%s, which get_trend does not answer", k)
		case k == "pagesTotal" || k == "performance" || k == "seo" || k == "accessibility" || k == "bestPractices":
			if got != v {
				t.Errorf("/docs/mcp shows %s: %v, get_trend answers %v for the demo site", k, v, got)
			}
		}
	}
	if shown["count"] != real["count"] {
		t.Errorf("/docs/mcp shows count: %v, get_trend answers %v", shown["count"], real["count"])
	}
}

// TestNoPageSendsUsersToTheReadme: what a page or notice says to read is a page the reader can
// open (issue 43: the signing secret's notice said "README", which a user of the service does
// not have, and the README's reference moved to docs/): no template and no string of this
// package names the README.
func TestNoPageSendsUsersToTheReadme(t *testing.T) {
	files, err := filepath.Glob("templates/*.html")
	must(t, err)
	code, err := filepath.Glob("*.go")
	must(t, err)
	for _, name := range append(files, code...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		must(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			if strings.Contains(line, "README") {
				t.Errorf("%s:%d sends the reader to the README: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestMCPDocsSayWhatTheHeaderChanges: /docs/mcp says what a request without
// MCP-Protocol-Version gets (issue 43: the README's curl sent none and got nine tools where the
// docs said twelve), and the number it gives is what tools/list answers such a request.
func TestMCPDocsSayWhatTheHeaderChanges(t *testing.T) {
	ms := newMCPServer(t)
	resp, body := ms.do(t, "POST", ms.demo.APIKey, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
	}
	var list struct {
		Result struct{ Tools []any } `json:"result"`
	}
	must(t, json.Unmarshal([]byte(body), &list))
	docs, err := ms.Client().Get(ms.URL + "/docs/mcp")
	must(t, err)
	page := readBody(t, docs)
	want := "a request without it is served as <code>2025-03-26</code>, which lists\n    the interface's " + strconv.Itoa(len(list.Result.Tools)) + " tools"
	if !strings.Contains(html.UnescapeString(page), want) {
		t.Errorf("/docs/mcp does not say %q", want)
	}
}
