package store

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func sampleExplain() *Explain {
	return &Explain{
		Requests: []Request{{URL: "https://a.test/", Entity: "a.test", Type: "Document", MIME: "text/html", Priority: "VeryHigh", Status: 200,
			TransferBytes: 2000, ResourceBytes: 1900, StartMs: 1, EndMs: 90},
			{URL: "https://cdn.b.test/w.js", Entity: "b.test", ThirdParty: true, Type: "Script", Status: 200, TransferBytes: 1141, StartMs: 700, EndMs: 1000, RenderBlocking: true, BlockingMs: 904}},
		Totals:     []Total{{Type: "Document", Requests: 1, TransferBytes: 2000}, {Type: "Script", ThirdParty: true, Requests: 1, TransferBytes: 1141}},
		LCP:        LCP{Element: &Element{Selector: "h1", Snippet: "<h1>"}, TTFBMs: 90, RenderDelayMs: 900, Phased: true},
		Shifts:     []LayoutShift{{Selector: "main", Score: 0.12, Window: 1, Causes: []ShiftCause{{Cause: "Unsized image element", Selector: "img"}}}},
		MainThread: []Work{{Group: "scriptEvaluation", Ms: 1000}},
		Scripts:    []ScriptCost{{URL: "https://cdn.b.test/w.js", TotalMs: 1000, ScriptingMs: 990, ParseMs: 3}},
		Entities:   []Entity{{Name: "a.test", Requests: 1, TransferBytes: 2000}, {Name: "b.test", ThirdParty: true, Requests: 1, TransferBytes: 1141, MainThreadMs: 1000}},
		Failing: []FailingAudit{{ID: "render-blocking-insight", Title: "Render blocking requests", Score: 0, Categories: []string{"performance"},
			Items: []string{"https://cdn.b.test/w.js"}}},
		Applied:            []AppliedAudit{{ID: "image-alt", Category: "accessibility", Weight: 10}, {ID: "is-crawlable", Category: "seo", Weight: 4.043478260869565}},
		LastVisualChangeMs: 2753,
		ThroughputKbps:     1638.4,
	}
}

func TestExplainRoundTrip(t *testing.T) {
	e := sampleExplain()
	back, err := DecodeExplain(EncodeExplain(e))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, e) {
		t.Errorf("got %+v\nwant %+v", back, e)
	}
	if got, err := DecodeExplain(EncodeExplain(nil)); got != nil || err != nil {
		t.Errorf("nil explain decodes to %+v, %v", got, err)
	}
}

// A kept compressor writes what a new one writes, byte for byte, whatever it wrote before.
func TestEncodeExplainKeptCompressor(t *testing.T) {
	fresh := func(e *Explain) []byte {
		raw, _ := json.Marshal(e)
		var buf bytes.Buffer
		buf.WriteByte(explainVersion)
		zw, _ := flate.NewWriter(&buf, explainLevel)
		zw.Write(raw)
		zw.Close()
		return buf.Bytes()
	}
	small, large := sampleExplain(), sampleExplain()
	for i := range 300 {
		large.Requests = append(large.Requests, Request{URL: "https://cdn.b.test/chunk-" + string(rune('a'+i%26)) + ".js", Type: "Script", TransferBytes: int64(i)})
	}
	for range 3 {
		for _, e := range []*Explain{large, small, {}} {
			if got, want := EncodeExplain(e), fresh(e); !bytes.Equal(got, want) {
				t.Fatalf("kept compressor wrote %d bytes, a new one %d", len(got), len(want))
			}
		}
	}
}

// A stored value that is not what EncodeExplain wrote is an error, never a panic nor an
// unbounded inflation.
func TestExplainDecodeRefuses(t *testing.T) {
	var bomb bytes.Buffer
	bomb.WriteByte(explainVersion)
	zw, _ := flate.NewWriter(&bomb, flate.BestCompression)
	zw.Write(bytes.Repeat([]byte(" "), MaxExplainBytes+10))
	zw.Close()
	for name, b := range map[string][]byte{
		"unknown version": {9, 1, 2},
		"not deflate":     {explainVersion, 0xff, 0xff, 0xff},
		"not JSON":        append([]byte{explainVersion}, EncodeExplain(sampleExplain())[5:]...),
		"too large":       bomb.Bytes(),
	} {
		if _, err := DecodeExplain(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecodeExplain(f *testing.F) {
	f.Add(EncodeExplain(sampleExplain()))
	f.Add([]byte{explainVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeExplain(b)
		if err == nil && e != nil {
			again, err := DecodeExplain(EncodeExplain(e))
			if err != nil || !reflect.DeepEqual(again, e) {
				t.Fatalf("a decoded explain does not round-trip: %v", err)
			}
		}
	})
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{{"short", 10, "short"}, {"abcdefghij", 6, "abc…"}, {"ééééé", 6, "é…"}} {
		if got := Clip(tt.in, tt.n); got != tt.want || len(got) > tt.n {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// v1Fields is a golden explain with only what version 1 kept: the fields added since (issue
// 42: the applied audits, the last visual change, the simulated throughput, each request's
// blocking estimate) are zero in a row it wrote.
func v1Fields(t *testing.T, golden []byte) []byte {
	t.Helper()
	var e Explain
	if err := json.Unmarshal(golden, &e); err != nil {
		t.Fatal(err)
	}
	e.Applied, e.LastVisualChangeMs, e.ThroughputKbps = nil, 0, 0
	for i := range e.Requests {
		e.Requests[i].BlockingMs = 0
	}
	out, _ := json.MarshalIndent(&e, "", "  ")
	return out
}

// Rows written before issue 43 (version 1: short keys) still read: the 25 fixture runs as
// version 1 stored them read back as their golden explain data.
func TestExplainV1Reads(t *testing.T) {
	b, err := os.ReadFile("../testdata/explain-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string][]byte
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 25 {
		t.Fatalf("%d stored runs, want 25", len(stored))
	}
	for name, v1 := range stored {
		if v1[0] != explainVersion1 {
			t.Fatalf("%s: version %d", name, v1[0])
		}
		e, err := DecodeExplain(v1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := json.MarshalIndent(e, "", "  ")
		golden, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "explain", name))
		if err != nil {
			t.Fatal(err)
		}
		want := v1Fields(t, golden)
		if string(got) != string(want) {
			t.Errorf("%s: version 1 reads as\n%s\nwant\n%s", name, got, want)
		}
	}
}
