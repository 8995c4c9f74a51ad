package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/memory"
)

// FuzzBearer sends arbitrary Authorization headers to the budget check (API keys only, its own
// parse) and to the MCP endpoint (requireBearer) (the Bearer parser and the
// token-prefix router). Only an API key, or at /api/mcp an access token, after a
// case-insensitive "Bearer " and optional spaces, gets in (A's key reads A's site, B's key gets
// 404 for it); everything else is a 401 with the JSON error shape and a one-line challenge.
func FuzzBearer(f *testing.F) {
	fx := newAPIFixture(f, memory.New())
	h := fx.Config.Handler
	for _, s := range []string{
		"Bearer " + fx.a.apiKey, "bearer " + fx.a.accessToken, "BEARER  " + fx.b.apiKey + " ", "Bearer\t" + fx.a.apiKey,
		"Bearer " + strings.ToUpper(fx.a.apiKey), "Bearer " + fx.a.apiKey + "\x00", "Bearer svc_", "Bearer at_", "Bearer ",
		"Bearer " + fx.a.apiKey + "," + fx.b.apiKey, "Basic " + fx.a.apiKey, "Bearer svc_" + strings.Repeat("a", 300),
		"Bearer \xff\xfe", "Bearer at_" + fx.a.accessToken, "Bearer " + fx.a.session, "Bearer rt_x", "",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	good := map[string]bool{fx.a.apiKey: true, fx.b.apiKey: true}
	f.Fuzz(func(t *testing.T, header string, mcp bool) {
		req := httptest.NewRequest("POST", "/api/external/budget-check", strings.NewReader(`{"siteId":"`+fx.a.siteID+`"}`))
		req.Header.Set("Content-Type", "application/json")
		if mcp {
			req = httptest.NewRequest("POST", "/api/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		req.Header["Authorization"] = []string{header}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		token := bearerToken(req)
		allowed := good[token] || mcp && (token == fx.a.accessToken || token == fx.b.accessToken)
		switch {
		case rec.Code == 200 || rec.Code == 404 && !mcp && token == fx.b.apiKey:
			if !allowed {
				t.Fatalf("%q got in (token %q)", header, token)
			}
			if !mcp && (token == fx.a.apiKey) != (rec.Code == 200) {
				t.Fatalf("%q: status %d", header, rec.Code)
			}
		case rec.Code == 401:
			if allowed {
				t.Fatalf("%q was refused: %s", header, rec.Body)
			}
			ch := rec.Header().Get("WWW-Authenticate")
			if !strings.HasPrefix(ch, `Bearer realm="sitepulse"`) || strings.ContainsAny(ch, "\r\n") {
				t.Fatalf("challenge %q", ch)
			}
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("401 body %q", rec.Body)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, header, rec.Body)
		}
	})
}

// FuzzReportPath requests /report/<anything> ("..", %2F, NUL, oversize): only the
// report's own token shows it; everything else is a 404 page or the router's redirect or 400,
// never a 500.
func FuzzReportPath(f *testing.F) {
	fx := newAPIFixture(f, memory.New())
	h := fx.Config.Handler
	token, hash := store.NewSecret("")
	must(f, fx.st.CreateReport(context.Background(), store.Report{ID: store.NewID(), TokenHash: hash, ScanID: fx.a.scanID,
		UserID: fx.a.userID, Title: "Fuzzed", CreatedAt: fx.now}))
	for _, s := range []string{token, token + "/", "../" + token, "x/../" + token, "%2e%2e%2F" + token, url.PathEscape(token + "/x"),
		"%00", "%ff", strings.Repeat("A", 5000), "./" + token, token + "%00", token + "?x=1", token + "#f", "", "%", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		u, err := url.ParseRequestURI("/report/" + rest)
		if err != nil {
			return // not a request line a client can send
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.URL, req.RequestURI = u, u.RequestURI()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			if u.Path != "/report/"+token {
				t.Fatalf("%q (path %q) showed the report", rest, u.Path)
			}
		case 301, 307, 308, 400, 404, 405:
		default:
			t.Fatalf("status %d for %q: %.200s", rec.Code, rest, rec.Body)
		}
		// A one-segment path reaches the report handler, whose 404 keeps the page out of indexes;
		// "." and ".." are the router's to clean (the fuzzer found "/report/." is its plain 404).
		seg := strings.TrimPrefix(u.Path, "/report/")
		if rec.Code == 404 && rec.Header().Get("X-Robots-Tag") == "" && strings.HasPrefix(u.Path, "/report/") &&
			seg != "" && seg != "." && seg != ".." && !strings.Contains(seg, "/") {
			t.Fatalf("a report 404 without X-Robots-Tag for %q", rest)
		}
	})
}

// FuzzCSVRow writes rows of arbitrary cells and reads them back with encoding/csv (RFC 4180):
// one record, every cell intact after the injection guard, no cell a spreadsheet would run.
func FuzzCSVRow(f *testing.F) {
	for _, s := range [][3]string{
		{"https://a.test/", "/", "mobile"}, {`=HYPERLINK("http://evil.test","x")`, "@SUM(1+1)", "+cmd|' /C calc'!A0"},
		{"-2+3", "\t=1", "\r=1"}, {`a"b`, "a,b", "a\r\nb"}, {" lead", "trail ", ""}, {"\n", "\r", `"`},
		{"\x00", "\xff\xfe", "é"}, {"'=x", "", ""},
	} {
		f.Add(s[0], s[1], s[2], uint8(2))
	}
	f.Fuzz(func(t *testing.T, a, b, c string, quoted uint8) {
		cells := []string{a, b, c}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := writeCSVRow(w, cells, int(quoted%4)-1); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if !bytes.HasSuffix(buf.Bytes(), []byte("\r\n")) {
			t.Fatalf("row %q does not end in CRLF", buf.Bytes())
		}
		r := csv.NewReader(&buf)
		r.FieldsPerRecord = 3
		recs, err := r.ReadAll()
		if err != nil || len(recs) != 1 {
			t.Fatalf("cells %q wrote %q: %d records, %v", cells, buf.String(), len(recs), err)
		}
		for i, got := range recs[0] {
			// encoding/csv reads a quoted CRLF as LF (its documented normalisation).
			want := strings.ReplaceAll(guardCell(cells[i]), "\r\n", "\n")
			if got != want {
				t.Fatalf("cell %d: wrote %q, read back %q", i, cells[i], got)
			}
			if got != "" && strings.ContainsRune("=+-@\t\r", rune(got[0])) {
				t.Fatalf("cell %d %q reads as a formula", i, got)
			}
		}
	})
}

// FuzzBudgetCheckCI sends arbitrary bodies, format parameters and Accept headers with a valid
// key to the budget check: every answer is one of the interface's statuses (a wait never
// begins: the demo site has no scan in flight), JSON for every error, never a 500; the
// Markdown escapes everything the body could have carried into it.
func FuzzBudgetCheckCI(f *testing.F) {
	fx := newAPIFixture(f, memory.New())
	h := fx.Config.Handler
	site, scan := fx.a.siteID, fx.a.scanID
	for _, body := range []string{
		`{"siteId":"` + site + `","scanId":"` + scan + `"}`, `{"siteId":"` + site + `","waitSeconds":0}`,
		`{"siteId":"` + site + `","waitSeconds":1e400}`, `{"siteId":"` + site + `","scanId":null,"waitSeconds":null}`,
		`{"siteId":"` + site + `","scanId":["` + scan + `"]}`, `{"siteId":"` + site + `","waitSeconds":-0}`,
		`{"siteId":"` + fx.b.siteID + `","scanId":"` + scan + `"}`, `{"siteId":1}`, `[]`, ``, `{"siteId":"` + site + `"`,
	} {
		f.Add(body, "markdown", "")
		f.Add(body, "", "application/xml")
		f.Add(body, "junit", "text/markdown;q=0.1")
	}
	f.Fuzz(func(t *testing.T, body, format, accept string) {
		req := httptest.NewRequest("POST", "/api/external/budget-check?format="+url.QueryEscape(format), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		req.Header.Set("Authorization", "Bearer "+fx.a.apiKey)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		ct := rec.Header().Get("Content-Type")
		switch rec.Code {
		case 200:
			if ct != "application/json" && !strings.HasPrefix(ct, "text/markdown") && !strings.HasPrefix(ct, "application/xml") {
				t.Fatalf("200 as %q", ct)
			}
		case 400, 404, 413, 422:
			if ct != "application/json" {
				t.Fatalf("%d as %q: %s", rec.Code, ct, rec.Body)
			}
		default:
			t.Fatalf("status %d for %q format %q accept %q: %s", rec.Code, body, format, accept, rec.Body)
		}
	})
}
