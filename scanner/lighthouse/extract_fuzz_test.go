package lighthouse

import (
	"encoding/json"
	"testing"

	"sitepulse/store"
)

// FuzzExtract feeds PSI and Lighthouse CLI extraction arbitrary bytes, seeded with every real
// fixture: it must never panic, and whatever it accepts must be a page result every surface can
// serve (scores 0-100, JSON that encodes).
func FuzzExtract(f *testing.F) {
	for _, name := range fixtureNames() {
		f.Add(fixture(f, name))
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"lighthouseResult":null}`, `{"lighthouseResult":{}}`,
		`{"error":{"code":500,"message":"Lighthouse returned error: NO_FCP"}}`,
		`{"lighthouseResult":{"categories":{"performance":{"score":1.5}}}}`,
		`{"lighthouseResult":{"categories":{"performance":{"score":0.5}},"audits":{"largest-contentful-paint":{"numericValue":-1}}},"loadingExperience":{"metrics":{"CUMULATIVE_LAYOUT_SHIFT_SCORE":{"percentile":7}}}}`,
		`{"lighthouseResult":{"runtimeError":{"code":"FAILED_DOCUMENT_REQUEST","message":"x"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsEncodingJSON(t, body)
		for name, extract := range map[string]func([]byte) (store.PageResult, error){"psi": ExtractPSI, "lighthouse": ExtractLighthouse} {
			r, err := extract(body)
			if err != nil {
				continue
			}
			for _, s := range []*int{r.Scores.Performance, r.Scores.SEO, r.Scores.Accessibility, r.Scores.BestPractices} {
				if s != nil && (*s < 0 || *s > 100) {
					t.Fatalf("%s: score %d out of 0-100", name, *s)
				}
			}
			if r.PagePath == "" {
				t.Fatalf("%s: empty page path", name)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Fatalf("%s: result does not encode: %v", name, err)
			}
		}
	})
}
