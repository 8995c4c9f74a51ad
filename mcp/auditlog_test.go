package mcp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
)

type recorded struct {
	mu    sync.Mutex
	lines []store.LogEvent
}

func (r *recorded) Record(_ context.Context, e store.LogEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, e)
}

// A report link made through generate_client_report goes to the site's workspace's security log,
// as one made on the scan page does, without the link (the credential).
func TestReportLinkIsRecorded(t *testing.T) {
	f := newFixture(t, memory.New())
	rec := &recorded{}
	f.srv = New(Config{Sites: f.st, Scans: f.st, Writes: f.st, BaseURL: testBase, Now: func() time.Time { return f.now }, AuditLog: rec})
	p := payload(t, f.tool(t, f.userID, "generate_client_report", map[string]any{"scanId": f.latestID, "title": "For ACME"}))
	token, _ := p["token"].(string)
	if len(rec.lines) != 1 {
		t.Fatalf("recorded %+v, want one line", rec.lines)
	}
	l := rec.lines[0]
	if l.Kind != store.LogReportCreated || l.WorkspaceID != f.userID || l.ActorID != f.userID || l.Target != "For ACME" || l.Details["via"] != "mcp" {
		t.Errorf("recorded %+v", l)
	}
	for _, v := range append([]string{l.Target}, mapValues(l.Details)...) {
		if token == "" || strings.Contains(v, token) {
			t.Errorf("the line holds the report's token (%q): %+v", token, l)
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
