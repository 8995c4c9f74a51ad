package store

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
)

// The stored form of an Explain: one version byte, then the Explain's own JSON (the types of
// explain.go, as every surface shows them), DEFLATE-compressed. Most of a run's bytes are its
// request URLs and the keys that repeat for every request; DEFLATE keeps each repeat as a
// back-reference, so the 20 fixture runs keep about 2 KB each (.ci/README.md, "What explains
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
	var zw *flate.Writer
	select {
	case zw = <-deflaters:
		zw.Reset(&buf)
	default:
		zw, _ = flate.NewWriter(&buf, explainLevel) // the level is valid
	}
	zw.Write(raw)
	zw.Close()
	select {
	case deflaters <- zw:
	default: // as many are kept as can run at once
	}
	return buf.Bytes()
}

// explainLevel is EncodeExplain's DEFLATE level. BestSpeed writes a run's explain data 13%
// larger than BestCompression (1,984 bytes a run against 1,750 over the 20 fixture runs; 2,689
// against 2,287 for testdata/psi/home.mobile.json, whose pictures beside it are 42 kB) in less
// than half the time (66 against 154 us); at 16 ingests at once
// BestCompression was 7% of all the CPU of storing results (perf of `loadkit ingest`, issue 46
// item 4). Any level reads back the same (DecodeExplain).
const explainLevel = flate.BestSpeed

// deflaters keeps EncodeExplain's compressors, two for each CPU at most: a new one allocates and
// clears its tables (1.2 MB at BestSpeed, 0.8 MB at BestCompression). A sync.Pool kept them only
// until the next collections: at ingest's rate of allocation (the pictures) that was every twenty
// results or so, each then clearing a new one (BenchmarkSavePageResult: 0.64-0.71 ms of CPU a
// result with the pool, 0.41-0.46 ms with these). Reset makes a kept one write what a new one
// would.
var deflaters = make(chan *flate.Writer, 2*runtime.GOMAXPROCS(0))

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
