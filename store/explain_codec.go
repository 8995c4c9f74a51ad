package store

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The stored form of an Explain: one version byte, then the Explain's own JSON (the types of
// explain.go, as every surface shows them), DEFLATE-compressed. Most of a run's bytes are its
// request URLs and the keys that repeat for every request; DEFLATE keeps each repeat as a
// back-reference, so the 20 fixture runs keep about 1.2 KB each (.ci/README.md, "What explains
// a run"). Postgres stores it as bytea (page_results.explain), the memory store as the same
// bytes. Version 1 (rows written before issue 43) read through explain_v1.go.

// explainVersion is the first byte of what EncodeExplain writes.
const explainVersion = 2

// MaxExplainBytes bounds an encoded Explain's decompressed JSON: a stored value is trusted as
// the store wrote it, but a decoder never inflates without a bound.
const MaxExplainBytes = 4 << 20

// EncodeExplain is the stored form of e (see above); nil for a nil Explain, which the stores
// keep as no explain data (a result stored before issue 33, or a test's).
func EncodeExplain(e *Explain) []byte {
	if e == nil {
		return nil
	}
	raw, err := json.Marshal(e)
	if err != nil {
		panic(err) // an Explain holds only strings, numbers and booleans
	}
	var buf bytes.Buffer
	buf.Grow(1 + len(raw)/4)
	buf.WriteByte(explainVersion)
	zw := deflaters.Get().(*flate.Writer)
	zw.Reset(&buf)
	zw.Write(raw)
	zw.Close()
	deflaters.Put(zw)
	return buf.Bytes()
}

// explainLevel is EncodeExplain's DEFLATE level. BestSpeed writes a run's explain data 17%
// larger than BestCompression (2,689 bytes against 2,287 for testdata/psi/home.mobile.json, the
// pictures beside it 42 kB) in less than half the time, and its 64 kB of state stay in a core's
// cache where BestCompression's 1 MB did not: at 16 ingests at once, BestCompression was 7% of
// all the CPU of storing results (perf of `loadkit ingest`, issue 46 item 4). Any level reads
// back the same (DecodeExplain).
const explainLevel = flate.BestSpeed

// deflaters keeps EncodeExplain's compressors: a new one allocates and clears its state (about
// 1 MB at BestCompression, half the CPU of storing a page result then: BenchmarkSavePageResult);
// Reset makes a kept one write what a new one would.
var deflaters = sync.Pool{New: func() any {
	zw, _ := flate.NewWriter(nil, explainLevel) // the level is valid
	return zw
}}

// DecodeExplain reads what EncodeExplain wrote, today or before issue 43 (version 1); nil (and
// no error) for no bytes.
func DecodeExplain(b []byte) (*Explain, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != explainVersion && b[0] != explainVersion1 {
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
	if b[0] == explainVersion1 {
		if raw, err = renameV1(raw); err != nil {
			return nil, fmt.Errorf("explain: %w", err)
		}
	}
	var e Explain
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	return &e, nil
}
