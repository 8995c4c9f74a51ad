package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// quickBodies are bodies on both sides of parseQuick's shape; quick says which side.
var quickBodies = []struct {
	body  string
	quick bool
}{
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"3f2c5a8e-1b7d-4c9a-9e2f-6a1d0c4b8e71"}}}`, true},
	{`{ "jsonrpc" : "2.0" ,	"id" : "a-1" ,` + "\n\r" + `"method":"tools/call","params":{"arguments":{"scanId":"x","pagePath":"/"},"name":"get_page_details"}}`, true},
	{` {"jsonrpc":"2.0","id":1,"method":"ping"}`, false},
	{`{"method":"tools/list","id":-0.5e+3,"jsonrpc":"2.0"}`, true},
	{`{"jsonrpc":"2.0","id":0,"method":"ping","params":{}}`, true},
	{`{"jsonrpc":"2.0","id":12E-2,"method":"x/unknown","params":{"arguments":{}}}`, true},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`, true},
	{`{"jsonrpc":"2.0","id":"","method":"","params":{"name":"","arguments":{"":""}}}`, true},
	// the decoder's way: not of the shape, or not JSON at all
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_trend","arguments":{"siteId":"x","limit":3}}}`, false},
	{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","ID":1,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1,"Method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`, false},
	{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false},
	{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":01,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1.,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":-,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1e,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":"\u00e9","method":"ping"}`, false},
	{"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", false},
	{"{\"jsonrpc\":\"2.0\",\"id\":\"é\",\"method\":\"ping\"}", false},
	{"{\"jsonrpc\":\"2.0\",\"id\":\"\t\",\"method\":\"ping\"}", false},
	{`{"jsonrpc":"2.0","id":1,"method":null}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"a"}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{}}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":null}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"k":"1","k":"2"}}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"k":1}}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"k":"1",}}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping"}x`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping"`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping",}`, false},
	{`{"jsonrpc":"2.0" "id":1,"method":"ping"}`, false},
	{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, false},
	{`{}`, false}, {``, false}, {`null`, false},
}

// TestQuickParseAgrees holds parseQuick to the decoder's path: every body it takes is valid JSON
// that parse, callTool's params and arguments decode to the same message, verdict, tool and
// arguments; and the shapes clients send are taken.
func TestQuickParseAgrees(t *testing.T) {
	for _, c := range quickBodies {
		if _, ok := parseQuick([]byte(c.body)); ok != c.quick {
			t.Errorf("parseQuick(%s): ok %v, want %v", c.body, ok, c.quick)
		}
		checkQuick(t, []byte(c.body))
	}
}

// FuzzQuickParse: whatever the body, parseQuick takes it only as the decoder reads it.
func FuzzQuickParse(f *testing.F) {
	for _, c := range quickBodies {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkQuick(t, bytes.TrimSpace(body)) })
}

func checkQuick(t *testing.T, body []byte) {
	t.Helper()
	q, ok := parseQuick(body)
	if !ok {
		return
	}
	if !json.Valid(body) {
		t.Fatalf("parseQuick took %q, which is not JSON", body)
	}
	m, id, owed, bad := parse(body)
	qm, qid, qowed, qbad := judge(q)
	if m.JSONRPC != qm.JSONRPC || !bytes.Equal(m.ID, qm.ID) || (m.Method == nil) != (qm.Method == nil) ||
		(m.Method != nil && *m.Method != *qm.Method) || !bytes.Equal(m.Params, qm.Params) || m.Result != nil || m.Error != nil {
		t.Fatalf("%s: parseQuick read %+v, the decoder %+v", body, qm, m)
	}
	if !bytes.Equal(id, qid) || owed != qowed || !reflect.DeepEqual(bad, qbad) {
		t.Fatalf("%s: verdicts differ: %s %v %v against the decoder's %s %v %v", body, qid, qowed, qbad, id, owed, bad)
	}
	if q.call == nil {
		return
	}
	var p struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Name == nil || *p.Name != q.call.name {
		t.Fatalf("%s: tool %q, the decoder's %v (%v)", body, q.call.name, p.Name, err)
	}
	a := args{}
	if len(p.Arguments) > 0 {
		if err := json.Unmarshal(p.Arguments, &a); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	if !reflect.DeepEqual(a, q.call.args) {
		t.Fatalf("%s: arguments %v, the decoder's %v", body, q.call.args, a)
	}
}
