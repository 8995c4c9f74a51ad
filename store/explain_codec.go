package store

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The stored form of an Explain: one version byte, then the Explain as JSON with one- and
// two-letter keys, DEFLATE-compressed. Most of a run's bytes are its request URLs, which share
// their origins and paths; DEFLATE keeps each repeat as a back-reference, so the 20 fixture runs
// keep about 1 KB each (.ci/README.md, "What explains a run"). Postgres stores it as bytea
// (page_results.explain), the memory store as the same bytes.

// explainVersion is the first byte of an encoded Explain.
const explainVersion = 1

// MaxExplainBytes bounds an encoded Explain's decompressed JSON: a stored value is trusted as
// the store wrote it, but a decoder never inflates without a bound.
const MaxExplainBytes = 4 << 20

type wireExplain struct {
	R []wireRequest `json:"r,omitempty"`
	T []wireTotal   `json:"t,omitempty"`
	L wireLCP       `json:"l"`
	S []wireShift   `json:"s,omitempty"`
	M []wireWork    `json:"m,omitempty"`
	C []wireScript  `json:"c,omitempty"`
	E []wireEntity  `json:"e,omitempty"`
	F []wireAudit   `json:"f,omitempty"`
	A []wireApplied `json:"a,omitempty"`
	V int           `json:"v,omitempty"`
	K float64       `json:"k,omitempty"`
}

type wireApplied struct {
	I string  `json:"i"`
	C string  `json:"c"`
	W float64 `json:"w"`
}

type wireRequest struct {
	U  string `json:"u"`
	N  string `json:"n,omitempty"`
	X  bool   `json:"x,omitempty"`
	Y  string `json:"y,omitempty"`
	M  string `json:"m,omitempty"`
	P  string `json:"p,omitempty"`
	S  int    `json:"s,omitempty"`
	TB int64  `json:"tb,omitempty"`
	RB int64  `json:"rb,omitempty"`
	A  int    `json:"a,omitempty"`
	B  int    `json:"b,omitempty"`
	K  bool   `json:"k,omitempty"`
	KM int    `json:"km,omitempty"`
	L  bool   `json:"l,omitempty"`
}

type wireTotal struct {
	Y string `json:"y"`
	X bool   `json:"x,omitempty"`
	N int    `json:"n,omitempty"`
	B int64  `json:"b,omitempty"`
}

type wireLCP struct {
	E  *Element `json:"e,omitempty"`
	T  int      `json:"t,omitempty"`
	D  int      `json:"d,omitempty"`
	L  int      `json:"l,omitempty"`
	R  int      `json:"r,omitempty"`
	OK bool     `json:"ok,omitempty"`
}

type wireShift struct {
	S  string      `json:"s"`
	N  string      `json:"n,omitempty"`
	V  float64     `json:"v"`
	W  int         `json:"w,omitempty"`
	CS []wireCause `json:"c,omitempty"`
}

type wireCause struct {
	C string `json:"c"`
	S string `json:"s,omitempty"`
	N string `json:"n,omitempty"`
}

type wireWork struct {
	G string `json:"g"`
	T int    `json:"t"`
}

type wireScript struct {
	U string `json:"u"`
	T int    `json:"t,omitempty"`
	S int    `json:"s,omitempty"`
	P int    `json:"p,omitempty"`
}

type wireEntity struct {
	N string `json:"n"`
	X bool   `json:"x,omitempty"`
	R int    `json:"r,omitempty"`
	B int64  `json:"b,omitempty"`
	T int    `json:"t,omitempty"`
}

type wireAudit struct {
	I  string   `json:"i"`
	T  string   `json:"t,omitempty"`
	S  int      `json:"s,omitempty"`
	C  []string `json:"c,omitempty"`
	IT []string `json:"it,omitempty"`
}

// EncodeExplain is the stored form of e (see above); nil for a nil Explain, which the stores
// keep as no explain data (a result stored before issue 33, or a test's).
func EncodeExplain(e *Explain) []byte {
	if e == nil {
		return nil
	}
	w := wireExplain{L: wireLCP{E: e.LCP.Element, T: e.LCP.TTFBMs, D: e.LCP.LoadDelayMs, L: e.LCP.LoadDurationMs,
		R: e.LCP.RenderDelayMs, OK: e.LCP.Phased}}
	for _, r := range e.Requests {
		w.R = append(w.R, wireRequest{U: r.URL, N: r.Entity, X: r.ThirdParty, Y: r.Type, M: r.MIME, P: r.Priority, S: r.Status,
			TB: r.TransferBytes, RB: r.ResourceBytes, A: r.StartMs, B: r.EndMs, K: r.RenderBlocking, KM: r.BlockingMs, L: r.LCP})
	}
	for _, t := range e.Totals {
		w.T = append(w.T, wireTotal{Y: t.Type, X: t.ThirdParty, N: t.Requests, B: t.TransferBytes})
	}
	for _, s := range e.Shifts {
		ws := wireShift{S: s.Selector, N: s.Snippet, V: s.Score, W: s.Window}
		for _, c := range s.Causes {
			ws.CS = append(ws.CS, wireCause{C: c.Cause, S: c.Selector, N: c.Snippet})
		}
		w.S = append(w.S, ws)
	}
	for _, m := range e.MainThread {
		w.M = append(w.M, wireWork{G: m.Group, T: m.Ms})
	}
	for _, c := range e.Scripts {
		w.C = append(w.C, wireScript{U: c.URL, T: c.TotalMs, S: c.ScriptingMs, P: c.ParseMs})
	}
	for _, en := range e.Entities {
		w.E = append(w.E, wireEntity{N: en.Name, X: en.ThirdParty, R: en.Requests, B: en.TransferBytes, T: en.MainThreadMs})
	}
	for _, a := range e.Failing {
		w.F = append(w.F, wireAudit{I: a.ID, T: a.Title, S: a.Score, C: a.Categories, IT: a.Items})
	}
	for _, a := range e.Applied {
		w.A = append(w.A, wireApplied{I: a.ID, C: a.Category, W: a.Weight})
	}
	w.V, w.K = e.LastVisualChangeMs, e.ThroughputKbps
	raw, err := json.Marshal(w)
	if err != nil {
		panic(err) // the wire form holds only strings, numbers and booleans
	}
	var buf bytes.Buffer
	buf.WriteByte(explainVersion)
	zw, _ := flate.NewWriter(&buf, flate.BestCompression) // the level is valid
	zw.Write(raw)
	zw.Close()
	return buf.Bytes()
}

// DecodeExplain reads what EncodeExplain wrote; nil (and no error) for no bytes.
func DecodeExplain(b []byte) (*Explain, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != explainVersion {
		return nil, fmt.Errorf("explain: unknown version %d", b[0])
	}
	zr := flate.NewReader(bytes.NewReader(b[1:]))
	defer zr.Close()
	raw, err := io.ReadAll(io.LimitReader(zr, MaxExplainBytes+1))
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	if len(raw) > MaxExplainBytes {
		return nil, errors.New("explain: larger than MaxExplainBytes")
	}
	var w wireExplain
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	e := &Explain{LCP: LCP{Element: w.L.E, TTFBMs: w.L.T, LoadDelayMs: w.L.D, LoadDurationMs: w.L.L, RenderDelayMs: w.L.R, Phased: w.L.OK},
		Requests: make([]Request, 0, len(w.R)), Totals: make([]Total, 0, len(w.T)), Shifts: make([]LayoutShift, 0, len(w.S)),
		MainThread: make([]Work, 0, len(w.M)), Scripts: make([]ScriptCost, 0, len(w.C)), Entities: make([]Entity, 0, len(w.E)),
		Failing: make([]FailingAudit, 0, len(w.F))}
	for _, r := range w.R {
		e.Requests = append(e.Requests, Request{URL: r.U, Entity: r.N, ThirdParty: r.X, Type: r.Y, MIME: r.M, Priority: r.P, Status: r.S,
			TransferBytes: r.TB, ResourceBytes: r.RB, StartMs: r.A, EndMs: r.B, RenderBlocking: r.K, BlockingMs: r.KM, LCP: r.L})
	}
	for _, t := range w.T {
		e.Totals = append(e.Totals, Total{Type: t.Y, ThirdParty: t.X, Requests: t.N, TransferBytes: t.B})
	}
	for _, s := range w.S {
		ls := LayoutShift{Selector: s.S, Snippet: s.N, Score: s.V, Window: s.W}
		for _, c := range s.CS {
			ls.Causes = append(ls.Causes, ShiftCause{Cause: c.C, Selector: c.S, Snippet: c.N})
		}
		e.Shifts = append(e.Shifts, ls)
	}
	for _, m := range w.M {
		e.MainThread = append(e.MainThread, Work{Group: m.G, Ms: m.T})
	}
	for _, c := range w.C {
		e.Scripts = append(e.Scripts, ScriptCost{URL: c.U, TotalMs: c.T, ScriptingMs: c.S, ParseMs: c.P})
	}
	for _, en := range w.E {
		e.Entities = append(e.Entities, Entity{Name: en.N, ThirdParty: en.X, Requests: en.R, TransferBytes: en.B, MainThreadMs: en.T})
	}
	for _, a := range w.F {
		e.Failing = append(e.Failing, FailingAudit{ID: a.I, Title: a.T, Score: a.S, Categories: a.C, Items: a.IT})
	}
	for _, a := range w.A {
		e.Applied = append(e.Applied, AppliedAudit{ID: a.I, Category: a.C, Weight: a.W})
	}
	e.LastVisualChangeMs, e.ThroughputKbps = w.V, w.K
	return e, nil
}
