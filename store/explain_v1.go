package store

import (
	"bytes"
	"encoding/json"
)

// Version 1 of the stored Explain (issue 33 to issue 43) was the same JSON with one- and
// two-letter keys. Rows written then are read by renaming their keys to the Explain's own
// (v1Keys, by the list or object that holds them) and decoding the result as today's form.
// Nothing writes version 1 any more; TestExplainV1Reads reads the 25 fixture runs as it wrote
// them (testdata/explain-v1.json). Postgres cannot inflate DEFLATE in SQL, so a migration
// could not rewrite the rows; renaming on read costs a few microseconds a detail page.
const explainVersion1 = 1

// v1Keys maps each version-1 key to the Explain's JSON name, by the name of the field that
// holds the object ("" for the Explain itself). lcp.element was stored in its own names.
var v1Keys = map[string]map[string]string{
	"":           {"r": "requests", "t": "totals", "l": "lcp", "s": "shifts", "m": "mainThread", "c": "scripts", "e": "entities", "f": "failing"},
	"requests":   {"u": "url", "n": "entity", "x": "thirdParty", "y": "type", "m": "mime", "p": "priority", "s": "status", "tb": "transferBytes", "rb": "resourceBytes", "a": "startMs", "b": "endMs", "k": "renderBlocking", "l": "lcp"},
	"totals":     {"y": "type", "x": "thirdParty", "n": "requests", "b": "transferBytes"},
	"lcp":        {"e": "element", "t": "ttfbMs", "d": "loadDelayMs", "l": "loadDurationMs", "r": "renderDelayMs", "ok": "phased"},
	"shifts":     {"s": "selector", "n": "snippet", "v": "score", "w": "window", "c": "causes"},
	"causes":     {"c": "cause", "s": "selector", "n": "snippet"},
	"mainThread": {"g": "group", "t": "ms"},
	"scripts":    {"u": "url", "t": "totalMs", "s": "scriptingMs", "p": "parseMs"},
	"entities":   {"n": "name", "x": "thirdParty", "r": "requests", "b": "transferBytes", "t": "mainThreadMs"},
	"failing":    {"i": "id", "t": "title", "s": "score", "c": "categories", "it": "items"},
}

// renameV1 is version-1 JSON with today's keys.
func renameV1(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // sizes and times come back exactly as written
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	top, ok := renameKeys(v, "").(map[string]any)
	if !ok {
		return raw, nil // not an object: today's decoder says so
	}
	for _, name := range v1Keys[""] {
		if _, ok := top[name]; !ok && name != "lcp" {
			top[name] = []any{} // version 1 left empty lists out and read them back empty
		}
	}
	return json.Marshal(top)
}

func renameKeys(v any, holder string) any {
	switch v := v.(type) {
	case []any:
		for i := range v {
			v[i] = renameKeys(v[i], holder)
		}
	case map[string]any:
		names, ok := v1Keys[holder]
		if !ok {
			return v
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			if name, ok := names[k]; ok {
				out[name] = renameKeys(x, name)
			}
		}
		return out
	}
	return v
}
