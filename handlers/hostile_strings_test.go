package handlers

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/scanner/notify"
	"sitepulse/store"
	"sitepulse/store/memory"
)

// hostileStrings are what a hostile tenant names a site, and a hostile page puts in its request
// URLs and element labels (issue 44, attack 10): chat mentions, a Markdown link, markup that
// runs, a spreadsheet formula, and line breaks that forge a line of their own or a CI runner's
// workflow command.
var hostileStrings = []string{
	"<!channel>", "@everyone", "[click](https://evil.test/)", "<svg onload=alert(1)>",
	`=HYPERLINK("https://evil.test","x")`, "x\r\n::error::forged", "\n::set-env name=X::1",
}

// hostileSiteName is a site name the store lets through (100 characters, no control
// characters): every hostile string but the line breaks.
const hostileSiteName = `=HYPERLINK("https://evil.test") <!channel> @everyone [click](https://evil.test/) <svg onload=1>`

// hostileLabel is an element label and snippet a page can carry: every hostile string at once.
var hostileLabel = strings.Join(hostileStrings, " ")

// hostileURL is a request URL a page can make: every hostile string, as a URL carries it.
var hostileURL = "https://cdn.evil.test/" + url.PathEscape(strings.Join(hostileStrings, " ")) + "?q=<svg onload=alert(1)>&x=[click](https://evil.test/)"

// cdataSection is an XML CDATA section (the JUnit report's failure texts): what it holds is text.
var cdataSection = regexp.MustCompile(`(?s)<!\[CDATA\[.*?\]\]>`)

// hostileMDLink finds the hostile Markdown link with its brackets unescaped.
var hostileMDLink = regexp.MustCompile(`(^|[^\\])\[click(\\)?\]\(`)

// forged reports the ways out escapes hostile text for a surface of kind: markup that runs, a
// chat mention or link, a forged line or workflow command, a formula. Every surface gets the
// checks of its kind; the kinds a surface is read as are listed in hostileSurfaces.
func forged(kind, out string) []string {
	var bad []string
	has := func(s, why string) {
		if strings.Contains(out, s) {
			bad = append(bad, why+": "+strings.TrimSpace(s))
		}
	}
	lines := func() {
		for _, l := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
			if strings.HasPrefix(strings.TrimSpace(l), "::") {
				bad = append(bad, "a line of its own that a runner reads as a workflow command: "+l)
			}
		}
	}
	switch kind {
	case "markup": // HTML, SVG, XML; a CDATA section is character data, never markup (XML 1.0 §2.7)
		markup := cdataSection.ReplaceAllString(out, "")
		for _, s := range []struct{ s, why string }{{"<svg onload", "markup that runs"}, {"<!channel>", "unescaped markup"}} {
			if strings.Contains(markup, s.s) {
				bad = append(bad, s.why+": "+s.s)
			}
		}
	case "slack":
		has("<!channel>", "a Slack mention")
		has("<https://", "a Slack link")
	case "discord": // an embed's title and description are Markdown, its footer plain text
		var m struct {
			Embeds []struct{ Title, Description string } `json:"embeds"`
		}
		json.Unmarshal([]byte(out), &m)
		for _, e := range m.Embeds {
			if hostileMDLink.MatchString(e.Title + "\n" + e.Description) {
				bad = append(bad, "a Markdown link: [click](")
			}
		}
		if !strings.Contains(out, `"allowed_mentions":{"parse":[]}`) {
			bad = append(bad, "mentions allowed")
		}
	case "teams":
		has(`"TextBlock"`, "a TextBlock, which reads Markdown")
	case "markdown": // a backslash escapes any ASCII punctuation (CommonMark)
		if regexp.MustCompile(`(^|[^\\])<svg`).MatchString(out) {
			bad = append(bad, "raw HTML: <svg")
		}
		if hostileMDLink.MatchString(out) {
			bad = append(bad, "a Markdown link: [click](")
		}
		lines()
	case "text": // e-mail bodies, MCP text, JUnit messages, a CI log
		lines()
	case "header":
		if strings.ContainsAny(out, "\r\n") {
			bad = append(bad, "a line break in a header")
		}
	case "csv":
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			return []string{"not CSV: " + err.Error()}
		}
		for _, row := range rows {
			for _, cell := range row {
				if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
					bad = append(bad, "a formula cell: "+cell)
				}
			}
		}
	case "json":
		if !json.Valid([]byte(out)) {
			bad = append(bad, "not JSON")
		}
	default:
		bad = append(bad, "no checks for the kind "+kind)
	}
	return bad
}

// TestHostileStringsInEveryRenderer runs one site whose name, request URLs and element labels
// are hostileStrings through every channel and format SitePulse renders, from one table: each
// alert channel kind the store knows (a new one without a row fails), the e-mail, the HTML
// pages, the SVG waterfall, the CSV and JSON export, the CI check's Markdown and JUnit, and MCP's
// text. Each surface is checked as what its reader reads it as.
func TestHostileStringsInEveryRenderer(t *testing.T) {
	st := memory.New()
	f := newAPIFixture(t, st)
	ctx := context.Background()
	a := f.a
	site := f.newSite(t, a.userID, hostileSiteName)
	poison := func(results []store.PageResult) []store.PageResult {
		for i := range results {
			r := &results[i]
			r.LCPElement = &store.Element{Selector: "h1", Snippet: "<h1>" + hostileLabel + "</h1>", NodeLabel: hostileLabel}
			for j := range r.CLSElements {
				r.CLSElements[j].Snippet = hostileLabel
			}
			if r.Explain != nil {
				if r.Explain.LCP.Element != nil {
					r.Explain.LCP.Element.NodeLabel, r.Explain.LCP.Element.Snippet = hostileLabel, hostileLabel
				}
				for j := range r.Explain.Requests {
					if j > 0 && j%3 == 0 {
						r.Explain.Requests[j].URL = hostileURL + "&n=" + string(rune('a'+j%26))
					}
				}
			}
		}
		return results
	}
	// One real publish, before and after: the digest has regressions to tell.
	body, err := os.ReadFile("../testdata/psi-before/home.mobile.json")
	must(t, err)
	earlier, err := lighthouse.ExtractPSI(body)
	must(t, err)
	before := f.recordScan(t, site, poison([]store.PageResult{earlier}), f.now.Add(-2*time.Hour))
	after := f.recordScan(t, site, poison(fixtureResults(t, "home.mobile")), f.now.Add(-time.Hour))
	must(t, st.SetBudgets(ctx, a.userID, site, map[string]store.Budget{"performance": {Threshold: 100}, "lcp": {Threshold: 1}}))
	published := f.now
	by := hostileLabel
	event := notify.Event{ID: "e1", Type: notify.EventRegressionConfirmed, CreatedAt: f.now, Workspace: notify.EventRef{ID: "w", Name: hostileSiteName},
		Site: notify.EventSite{ID: site, Name: hostileSiteName, Domain: "example.test"},
		Scan: notify.EventScan{ID: after, URL: "https://sitepulse.test/x", Strategy: store.StrategyMobile, Trigger: "webhook", PublishedBy: &by, PublishedAt: &published},
		Data: notify.EventDetail{Changes: []notify.EventChange{{PagePath: "/", Strategy: store.StrategyMobile, Explained: true, Cause: hostileLabel,
			Added: []notify.EventRequest{{URL: hostileURL, Type: "Script", Entity: hostileLabel}}}}}}
	failed := event
	failed.Type, failed.Data = notify.EventScanFailed, notify.EventDetail{Reason: hostileLabel}
	events := []notify.Event{event, failed}

	get := func(t *testing.T, path string) string {
		t.Helper()
		resp, body := f.do(t, "GET", path, "", "", cookie(a.session))
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %.300s", path, resp.StatusCode, body)
		}
		return body
	}
	check := func(t *testing.T, format string) string {
		t.Helper()
		resp, body := f.do(t, "POST", "/api/external/budget-check?format="+format, "application/json", `{"siteId":"`+site+`"}`, bearer(a.apiKey))
		if resp.StatusCode != 200 {
			t.Fatalf("budget check %s: %d %.300s", format, resp.StatusCode, body)
		}
		return body
	}
	mcpText := func(t *testing.T, tool, args string) string {
		t.Helper()
		_, body := f.do(t, "POST", "/api/mcp", "application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`, bearer(a.apiKey))
		var rpc struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(body), &rpc) != nil || len(rpc.Result.Content) == 0 {
			t.Fatalf("%s: %.300s", tool, body)
		}
		return rpc.Result.Content[0].Text
	}
	page := "/sites/" + site + "/scans/" + after

	type surface struct {
		name  string
		kinds []string
		out   func(t *testing.T) []string
		// carries is false for a surface that shows none of a site's name, request URLs and
		// element labels (the CSV export's columns), so the strings need not reach it.
		carries bool
	}
	channel := func(kind string) func(*testing.T) []string {
		return func(t *testing.T) []string {
			var out []string
			for _, e := range events {
				b, _, err := notify.Render(kind, e, []byte("k"), f.now)
				must(t, err)
				out = append(out, string(b))
			}
			return out
		}
	}
	// The alert channels: every kind the store accepts needs a row (the e-mail channel sends notify.Email).
	channels := map[string]surface{
		store.ChannelSlack:   {"Slack", []string{"slack", "json"}, channel(notify.KindSlack), true},
		store.ChannelTeams:   {"Teams", []string{"teams", "json"}, channel(notify.KindTeams), true},
		store.ChannelDiscord: {"Discord", []string{"discord", "json"}, channel(notify.KindDiscord), true},
		store.ChannelWebhook: {"the signed webhook", []string{"json"}, channel(notify.KindWebhook), true},
		store.ChannelEmail: {"the e-mail channel's body", []string{"text"}, func(t *testing.T) []string {
			var out []string
			for _, e := range events {
				_, body := notify.Email(e)
				out = append(out, body)
			}
			return out
		}, true},
	}
	for _, kind := range store.ChannelKinds {
		if _, ok := channels[kind]; !ok {
			t.Errorf("the alert channel kind %q has no row in this test: add one", kind)
		}
	}
	surfaces := []surface{
		{"the e-mail's subject", []string{"header"}, func(t *testing.T) []string {
			var out []string
			for _, e := range events {
				subject, _ := notify.Email(e)
				out = append(out, subject)
			}
			return out
		}, true},
		{"the digest e-mail", []string{"text"}, func(t *testing.T) []string {
			var logged bytes.Buffer
			d := &notify.Digest{Store: st, BaseURL: testBaseURL, Now: func() time.Time { return f.now }, Log: slog.New(slog.NewJSONHandler(&logged, nil))}
			u, err := st.UserByID(ctx, a.userID)
			must(t, err)
			must(t, d.Work(ctx, store.Job{}, notify.DigestJob{ScanID: after, To: u.Email}))
			var m struct{ Subject, Body string }
			if json.Unmarshal(logged.Bytes(), &m) != nil || m.Body == "" {
				t.Fatalf("no digest: %s", logged.String())
			}
			return []string{m.Body, m.Subject}
		}, true},
		{"the scan page", []string{"markup"}, func(t *testing.T) []string { return []string{get(t, page)} }, true},
		{"the page detail", []string{"markup"}, func(t *testing.T) []string { return []string{get(t, page+"/page?path=%2F&strategy=mobile")} }, true},
		{"the compare page and its SVG waterfall", []string{"markup"}, func(t *testing.T) []string {
			return []string{get(t, "/sites/"+site+"/compare?from="+before+"&to="+after+"&page=%2F&strategy=mobile")}
		}, true},
		{"the CSV export", []string{"csv"}, func(t *testing.T) []string { return []string{get(t, "/api/sites/"+site+"/export")} }, false},
		{"the JSON export", []string{"json"}, func(t *testing.T) []string { return []string{get(t, "/api/sites/"+site+"/export?format=json")} }, true},
		{"the CI check's Markdown", []string{"markdown"}, func(t *testing.T) []string { return []string{check(t, "markdown")} }, true},
		{"the CI check's JUnit", []string{"markup", "text"}, func(t *testing.T) []string { return []string{check(t, "junit")} }, true},
		{"the CI check's JSON", []string{"json"}, func(t *testing.T) []string { return []string{check(t, "json")} }, true},
		{"MCP's text", []string{"text"}, func(t *testing.T) []string {
			return []string{mcpText(t, "list_sites", "{}"), mcpText(t, "get_lcp_elements", `{"scanId":"`+after+`"}`),
				mcpText(t, "get_page_details", `{"scanId":"`+after+`","pagePath":"/"}`)}
		}, true},
	}
	for _, kind := range store.ChannelKinds {
		if c, ok := channels[kind]; ok {
			surfaces = append(surfaces, c)
		}
	}
	for _, s := range surfaces {
		t.Run(s.name, func(t *testing.T) {
			for _, out := range s.out(t) {
				if s.carries && !strings.Contains(out, "evil") {
					t.Errorf("the hostile strings never reached it: %.300s", out)
				}
				for _, kind := range s.kinds {
					for _, b := range forged(kind, out) {
						t.Errorf("%s (read as %s)", b, kind)
					}
				}
			}
		})
	}
}
