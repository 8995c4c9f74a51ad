package lighthouse

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sitepulse/store"
)

// sameAsEncodingJSON holds the one-pass decoders to encoding/json on body: whatever they read
// (ok) must be what json.Unmarshal reads, without error; validJSON must answer as json.Valid.
// FuzzExtract runs it on every input.
func sameAsEncodingJSON(t *testing.T, body []byte) {
	t.Helper()
	if got, want := validJSON(body), json.Valid(body); got != want {
		t.Fatalf("validJSON %v, json.Valid %v on %q", got, want, body)
	}
	if fast, ok := decodePSI(body); ok {
		var slow psiResponse
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("decodePSI read what json.Unmarshal refuses (%v): %q", err, body)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decodePSI differs from json.Unmarshal on %q:\n got %s\nwant %s", body, show(fast), show(slow))
		}
	}
	if fast, ok := decodeLHR(body); ok {
		var slow lhr
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("decodeLHR read what json.Unmarshal refuses (%v): %q", err, body)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decodeLHR differs from json.Unmarshal on %q:\n got %s\nwant %s", body, show(fast), show(slow))
		}
	}
	// Details are valid JSON (decodePSI validated them): decodeDetails reads them into each
	// type the extraction reads (and the shapes of explain.go's own), as json.Unmarshal does.
	if json.Valid(body) {
		for _, target := range detailTargets() {
			want := reflect.New(reflect.TypeOf(target).Elem()).Interface()
			err := json.Unmarshal(body, want)
			if ok := decodeDetails(body, target); ok != (err == nil) || !reflect.DeepEqual(target, want) {
				t.Fatalf("decodeDetails into %T differs from json.Unmarshal on %q:\n got %v %s\nwant %v %s", target, body, ok, show(target), err, show(want))
			}
		}
		if got, want := itemLabels(body), itemLabelsBefore(body); !slices.Equal(got, want) {
			t.Fatalf("itemLabels differs from json.Decoder's on %q:\n got %q\nwant %q", body, got, want)
		}
	}
}

// detailTargets are new values of the types decodeDetails reads details into.
func detailTargets() []any {
	return []any{new(filmstrip), new(frame), new(opportunity), new(typedItems), new(labelled), new(shiftTable), new(node),
		new(struct {
			Items []map[string]any `json:"items"`
		}),
		new(struct { // network-requests, as requests reads it
			Items []struct {
				URL                string   `json:"url"`
				StatusCode         float64  `json:"statusCode"`
				NetworkRequestTime *float64 `json:"networkRequestTime"`
				Flag               bool     `json:"flag"`
				Any                any      `json:"any"`
				Count              int      `json:"count"`
				NoTag              string
			} `json:"items"`
			DebugData struct {
				InitiatorPath []struct {
					URL string `json:"url"`
				} `json:"initiatorPath"`
			} `json:"debugData"`
		}),
	}
}

// itemLabelsBefore is itemLabels as it was with json.Decoder, which it must answer as.
func itemLabelsBefore(raw json.RawMessage) []string {
	var d struct {
		Type  string          `json:"type"`
		Items json.RawMessage `json:"items"`
	}
	if json.Unmarshal(raw, &d) != nil || len(d.Items) == 0 || d.Items[0] != '[' {
		return nil
	}
	items := d.Items
	if d.Type == "list" { // the first table of the list
		items = nil
		dec := json.NewDecoder(bytes.NewReader(d.Items))
		if _, err := dec.Token(); err != nil {
			return nil
		}
		for dec.More() {
			var t struct {
				Type  string          `json:"type"`
				Items json.RawMessage `json:"items"`
			}
			if dec.Decode(&t) != nil {
				return nil
			}
			if t.Type == "table" && len(t.Items) > 0 && t.Items[0] == '[' {
				items = t.Items
				break
			}
		}
		if items == nil {
			return nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(items))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var out []string
	for dec.More() && len(out) < store.MaxFailingItems {
		var it labelled // decoded by encoding/json here, by the walker (read) in the code
		if dec.Decode(&it) != nil {
			break
		}
		if label := it.label(); label != "" && !slices.Contains(out, label) {
			out = append(out, store.Clip(label, store.MaxExplainText))
		}
	}
	return out
}

// Every real answer is read in one pass (not handed back to json.Unmarshal), to what
// json.Unmarshal reads; so are its report alone and its filmstrip.
func TestDecodeRealAnswersInOnePass(t *testing.T) {
	for _, name := range fixtureNames() {
		t.Run(name, func(t *testing.T) {
			body := fixture(t, name)
			sameAsEncodingJSON(t, body)
			resp, ok := decodePSI(body)
			if !ok {
				t.Fatal("decodePSI handed a real answer back to json.Unmarshal")
			}
			var raw struct {
				LighthouseResult json.RawMessage `json:"lighthouseResult"`
			}
			json.Unmarshal(body, &raw)
			sameAsEncodingJSON(t, raw.LighthouseResult)
			if _, ok := decodeLHR(raw.LighthouseResult); !ok {
				t.Fatal("decodeLHR handed a real report back to json.Unmarshal")
			}
			for _, a := range resp.LighthouseResult.Audits {
				if len(a.Details) > 0 {
					sameAsEncodingJSON(t, a.Details)
				}
			}
		})
	}
}

// What the one-pass decoders must hand to json.Unmarshal, or read as it does: keys it matches
// ignoring case or through escapes, fields twice, other types, nulls, numbers out of range,
// invalid JSON of every kind and nesting past its limit.
func TestDecodeOddAnswers(t *testing.T) {
	for _, body := range []string{
		`{}`, `null`, `[]`, ` {"lighthouseResult":null} `, `{"lighthouseResult":{}}`, `{"LighthouseResult":{}}`,
		`{"lighthouseResult":{"audits":null}}`, `{"lighthouseResult":{"audits":[]}}`, `{"lighthouseResult":{"audits":{"a":null}}}`,
		`{"lighthouseResult":{"audits":{"a":{"Title":"x"}}}}`, `{"lighthouseResult":{"audits":{"a":{"title":"x","title":"y"}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"t\u0069tle":"x"}}}}`, `{"lighthouseResult":{"audits":{"\u0061":{}}}}`,
		`{"lighthouseResult":{"audits":{"a":{},"a":{"score":1}}}}`, `{"lighthouseResult":{"audits":{"a":{"score":"1"}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"score":1e400}}}}`, `{"lighthouseResult":{"audits":{"a":{"score":null,"numericValue":-0.5e-3}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"title":"caf\u00e9 \"q\"","description":"\xff"}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"details":{"items":[1,2,{}]}},"b":{"details":null}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"metricSavings":{"LCP":1},"metricSavings":{"FCP":2}}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"ſcore":1}}}}`, `{"lighthouseResult":{"audits":{"a":{"\u212atitle":1}}}}`,
		`{"lighthouseResult":{"configSettings":{"formFactor":"mobile"},"configSettings":{"throttling":{}}}}`,
		`{"lighthouseResult":{"runtimeError":null,"categories":{"performance":{"score":0.5}},"entities":null}}`,
		`{"lighthouseResult":{"categories":[]}}`, `{"lighthouseResult":{"categories":null}}`, `{"lighthouseResult":{"categories":{"a":null,"b":{"score":null,"auditRefs":null}}}}`,
		`{"lighthouseResult":{"categories":{"a":{},"a":{}}}}`, `{"lighthouseResult":{"categories":{"a":{"auditRefs":[null,{"id":"x","weight":3,"group":"g","Weight":4}]}}}}`,
		`{"lighthouseResult":{"categories":{"a":{"auditRefs":[{"id":1}]}}}}`, `{"lighthouseResult":{"categories":{"a":{"auditRefs":{}}}}}`, `{"lighthouseResult":{"categories":{"a":{"auditRefs":[]}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"metricSavings":{"LCP":1,"LCP":null,"FCP":2}}}}}`, `{"lighthouseResult":{"audits":{"a":{"metricSavings":{"LCP":"1"}}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"metricSavings":null}}}}`, `{"lighthouseResult":{"audits":{"a":{"metricSavings":[]}}}}`, `{"lighthouseResult":{"requestedUrl":5}}`, `{"lighthouseResult":7}`,
		`{"error":{"code":500,"message":"x"}}`, `{"error":{"code":"500"}}`, `{"loadingExperience":{"metrics":{"X":{"percentile":1}}}}`,
		`{"`, `{"a"`, `{"a":`, `[`, `{"finalUrl":`, `{"lighthouseResult":{"audits":{"a":{"score": `, `{"items":[`, `{"items":[ `, `{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":.5}`, `{"a":tru}`, `{"a":"\x01"}`,
		`{"a":"\q"}`, `{"a":"\u12g4"}`, `{"a":"x`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":{}}}`, `{} {}`, ``, ` `, `"x"`,
		`{"items":[{"timing":1,"data":"data:x"},null,{"timing":"2","data":3}]}`, `{"items":{}}`, `{"items":null,"items":[]}`,
		`{"timing":1,"data":"x","data":"y"}`, `{"type":"opportunity","overallSavingsMs":null}`, `{"type":1,"overallSavingsMs":2}`,
		`{"type":"list","items":[null,{"type":"table","items":[{"url":"a"},{"node":{"selector":"b"}},{"url":1,"sourceLocation":{"url":"c"}},{"url":"a"},7,{"url":"d"}]}]}`,
		`{"type":"list","items":[3,{"type":"table","items":[{"url":"a"}]}]}`, `{"type":"table","items":{}}`, `{"Items":[{"url":"a"}],"TYPE":"x"}`,
		`{"items":[{"node":null,"url":"a"},{"node":{"selector":"s","Selector":"t"}},{"node":"x"},{"url":"b"}]}`, `{"url":{"a":1},"node":{"selector":"s","snippet":"<p \\"x\\">"}}`,
		`{"url":null,"node":{"type":"node","nodeLabel":null,"boundingRect":{"top":1}},"sourceLocation":{"url":"u"}}`, `{"node":{"selector":"a","selector":"b"}}`,
		`{"items":[{"url":"a"},{"url":"b"},{"url":"c"},{"url":"d"},{"url":"e"},{"url":"f"},{"url":"g"}]}`, `{"Data":"x"}`, `{"timing":-1e999}`,
		`{"data":null,"timing":null}`, `{"items":[{"url":"a\\\"b","any":"q\\","flag":true,"count":3,"NoTag":"x","statusCode":null}],"debugData":{"initiatorPath":[{"url":"u"}]}}`,
		`{"items":[{"any":[1,{"a":"}"}],"flag":false,"networkRequestTime":12.5,"url":"\u00e9"}]}`, `{"items":[{"flag":1}]}`, `{"items":[{"count":1.5}]}`,
		`{"items":[{"url":"x"}],"items":null}`, `{"items":[null,{"url":"y","extra":{"deep":["]","}"]}}]}`, `{"type":"table","items":[{"node":{"type":"node","selector":"a \"b\""}}]}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"lighthouseResult":{"audits":{"a":{"details":` + strings.Repeat("[", 9996) + strings.Repeat("]", 9996) + `}}}}`,
		`{"lighthouseResult":{"audits":{"a":{"details":` + strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `}}}}`,
	} {
		sameAsEncodingJSON(t, []byte(body))
	}
}

// Each walker's list of fields is its struct's JSON names, in field order: a field added to a
// struct and not to the walker would be left empty by the walker alone. (decodeDetails reads
// the names off its types.)
func TestWalkerFieldsAreTheStructs(t *testing.T) {
	for _, c := range []struct {
		names []string
		of    any
	}{
		{psiFields, psiResponse{}}, {lhrFields, lhr{}}, {auditFields, audit{}}, {categoryFields, category{}},
		{auditRefFields, auditRef{}},
	} {
		typ := reflect.TypeOf(c.of)
		var want []string
		for i := range typ.NumField() {
			want = append(want, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
		}
		if !slices.Equal(c.names, want) {
			t.Errorf("%s: walker reads %q, the struct has %q", typ, c.names, want)
		}
	}
}
