package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/store"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden/mcp")

const testBase = "http://sitepulse.test"

// fixture is an MCP server over a store holding the demo account (two real scans of the demo
// site) and a second user with a site of its own and no scans.
type fixture struct {
	srv        *Server
	st         store.Store
	now        time.Time
	demo       demo.Seeded
	userID     string
	latestID   string
	previousID string
	otherUser  string
	otherSite  string
}

func newFixture(t testing.TB, st store.Store) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{st: st, now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	d, err := demo.Seed(ctx, st, demo.Fixtures{FS: os.DirFS(".."), Before: "testdata/psi-before", Latest: "testdata/psi"}, f.now, 1000)
	if err != nil {
		t.Fatal(err)
	}
	f.demo = d
	u, err := st.UserByEmail(ctx, demo.Email)
	if err != nil {
		t.Fatal(err)
	}
	f.userID = u.ID
	scans, err := st.CompletedScans(ctx, u.ID, d.SiteID, 2)
	if err != nil || len(scans) != 2 {
		t.Fatalf("demo scans: %v %v", scans, err)
	}
	f.latestID, f.previousID = scans[0].ID, scans[1].ID
	f.otherUser, f.otherSite = store.NewID(), store.NewID()
	if err := st.CreateUser(ctx, store.User{ID: f.otherUser, Email: "other@example.com", PasswordHash: "x", CreatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSite(ctx, store.Site{ID: f.otherSite, UserID: f.otherUser, Name: "Other Site", Domain: "other.test", CreatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	f.srv = New(Config{Sites: st, Scans: st, Writes: st, BaseURL: testBase, Now: func() time.Time { return f.now }})
	return f
}

// allScopes is the context of a credential that may read and publish, as the handlers
// package hands Serve after checking the bearer token.
var allScopes = store.WithScope(context.Background(), store.ScopeAll)

// rpc sends one body as userID and returns the HTTP status and the decoded response.
func (f *fixture) rpc(t testing.TB, userID, body string) (int, map[string]any) {
	t.Helper()
	status, out := f.srv.Serve(allScopes, userID, []byte(body))
	if out == nil {
		return status, nil
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("response is not a JSON object: %s", out)
	}
	return status, m
}

// tool calls a tool and returns its result object (or fails on a JSON-RPC error).
func (f *fixture) tool(t testing.TB, userID, name string, args map[string]any) map[string]any {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	status, m := f.rpc(t, userID, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+string(params)+`}`)
	if status != 200 || m["error"] != nil {
		t.Fatalf("%s: status %d, %v", name, status, m["error"])
	}
	return m["result"].(map[string]any)
}

// payload is a successful tool result's decoded text.
func payload(t testing.TB, result map[string]any) map[string]any {
	t.Helper()
	if result["isError"] == true {
		t.Fatalf("isError: %v", result["content"])
	}
	text := textOf(t, result)
	var p map[string]any
	if err := json.Unmarshal([]byte(text), &p); err != nil {
		t.Fatalf("text is not JSON: %s", text)
	}
	return p
}

func textOf(t testing.TB, result map[string]any) string {
	t.Helper()
	content, _ := result["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("content = %v", result["content"])
	}
	c := content[0].(map[string]any)
	if c["type"] != "text" {
		t.Fatalf("content type = %v", c["type"])
	}
	return c["text"].(string)
}

// golden compares text (a payload, ids replaced by names) with testdata/golden/mcp/<name>.json;
// -update rewrites it.
func golden(t *testing.T, name, text string, replace map[string]string) {
	t.Helper()
	for id, label := range replace {
		text = strings.ReplaceAll(text, id, label)
	}
	var buf bytes.Buffer // Indent keeps the payload's key order and characters
	if err := json.Indent(&buf, []byte(text), "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	path := filepath.Join("..", "testdata", "golden", "mcp", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./mcp -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from %s (rewrite with go test ./mcp -update, then git diff):\n%.2000s", name, path, buf.String())
	}
}
