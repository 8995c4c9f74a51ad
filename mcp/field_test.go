package mcp

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/store/memory"
)

// TestGetFieldData: get_field_data serves the demo's recorded field story (weekly CrUX, daily
// beacon, the slowest interactions, the field-only INP regression) with its view's charts from
// 2025-06-18 on, another account's site is not found, a site without field data says so, and a
// 2025-03-26 session neither lists nor runs the tool.
func TestGetFieldData(t *testing.T) {
	f := newFixture(t, memory.New())
	rec, err := demo.LoadField(os.DirFS(".."))
	if err != nil {
		t.Fatal(err)
	}
	f.srv = New(Config{Sites: f.st, Scans: f.st, Writes: f.st, BaseURL: testBase, Now: func() time.Time { return f.now },
		Field: demo.NewField(rec, f.demo.SiteID, f.now.Add(-50*time.Hour), f.st, f.st, nil)})

	r := f.call2025(t, allScopes, "get_field_data", map[string]any{"siteId": f.demo.SiteID, "pagePath": "/pricing", "device": "phone"})
	var p fieldData
	sc, _ := json.Marshal(r["structuredContent"])
	if err := json.Unmarshal(sc, &p); err != nil {
		t.Fatal(err)
	}
	if !p.HasData || len(p.Crux) != 3 || len(p.Beacon) != 3 || len(p.Crux[0].Points) != 12 || p.Crux[0].Device != "phone" {
		t.Fatalf("pricing on phones: hasData %v, %d CrUX and %d beacon series", p.HasData, len(p.Crux), len(p.Beacon))
	}
	if len(p.SlowInteractions) != 3 || p.SlowInteractions[0].Selector != "button.plan-toggle" || p.SlowInteractions[0].PagePath != "/pricing" {
		t.Errorf("slow interactions %+v", p.SlowInteractions)
	}
	if len(p.FieldOnly) != 1 || !strings.Contains(p.FieldOnly[0].Text, "on /pricing: click on button.plan-toggle") {
		t.Errorf("field-only %+v", p.FieldOnly)
	}
	text := textOf(t, r)
	for _, want := range []string{"Field data (real users) for /pricing.", "Field-only regression: INP p75", "button.plan-toggle"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	v := r["_meta"].(map[string]any)[metaView].(map[string]any)
	charts := v["charts"].([]any)
	if len(charts) != 3 || !strings.HasPrefix(charts[0].(map[string]any)["chart"].(string), `<svg class="trend"`) {
		t.Errorf("view charts %d", len(charts))
	}

	whole := f.call2025(t, allScopes, "get_field_data", map[string]any{"siteId": f.demo.SiteID})
	b, _ := json.Marshal(whole["structuredContent"])
	if !strings.Contains(string(b), `"device":"desktop"`) || !strings.Contains(string(b), `"pagePath":""`) {
		t.Errorf("the whole site, both devices: %.300s", b)
	}

	if r := f.call2025(t, allScopes, "get_field_data", map[string]any{"siteId": f.otherSite}); r["isError"] != true ||
		!strings.Contains(textOf(t, r), "not found") {
		t.Errorf("another account's site: %v", r)
	}

	// A site of the user's without field data (the fake serves the demo site only).
	edge, _, _ := edgeSite(t, f)
	if r := f.call2025(t, allScopes, "get_field_data", map[string]any{"siteId": edge}); !strings.HasPrefix(textOf(t, r), "No field data for this site") {
		t.Errorf("a site without field data: %v", r)
	}

	// 2025-03-26: not listed, not callable.
	_, list := f.rpc(t, f.userID, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	b, _ = json.Marshal(list)
	if strings.Contains(string(b), "get_field_data") {
		t.Error("2025-03-26 lists get_field_data")
	}
	_, m := f.rpc(t, f.userID, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_field_data","arguments":{"siteId":"`+f.demo.SiteID+`"}}}`)
	if m["error"] == nil {
		t.Errorf("2025-03-26 ran get_field_data: %v", m)
	}
}
