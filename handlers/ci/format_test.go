package ci

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestFormatOf: the format parameter, in the query or the body (where the rest of the check's
// parameters are), wins; the two disagreeing is a 422; else Accept's most preferred of the
// three; JSON otherwise, and then the interface's own answer.
func TestFormatOf(t *testing.T) {
	tests := []struct {
		query, accept string
		format        string
		explicit      bool
		problem       bool
		body          string // the body's "format" member, as sent
	}{
		{"", "", FormatJSON, false, false, ""},
		{"", "application/json", FormatJSON, false, false, ""},
		{"", "text/html, */*", FormatJSON, false, false, ""},
		{"", "text/markdown", FormatMarkdown, true, false, ""},
		{"", "text/markdown; charset=utf-8; variant=GFM", FormatMarkdown, true, false, ""},
		{"", "application/xml", FormatJUnit, true, false, ""},
		{"", "application/junit+xml", FormatJUnit, true, false, ""},
		{"", "text/xml;q=0.9, application/json;q=0.1", FormatJUnit, true, false, ""},
		{"", "application/json, text/markdown;q=0.5", FormatJSON, false, false, ""},
		{"", "text/markdown;q=0.4, application/xml;q=0.8", FormatJUnit, true, false, ""},
		{"", "text/markdown;q=oops", FormatJSON, false, false, ""},
		{"?format=markdown", "application/xml", FormatMarkdown, true, false, ""},
		{"?format=JUnit", "", FormatJUnit, true, false, ""},
		{"?format=md", "", FormatMarkdown, true, false, ""},
		{"?format=json", "text/markdown", FormatJSON, true, false, ""},
		{"?format=", "", FormatJSON, true, true, ""},
		{"?format=html", "", FormatJSON, true, true, ""},
		{"", "", FormatMarkdown, true, false, `"markdown"`},
		{"", "application/xml", FormatMarkdown, true, false, `"md"`},
		{"", "", FormatJUnit, true, false, `"JUnit"`},
		{"?format=junit", "", FormatJUnit, true, false, `"xml"`},
		{"?format=markdown", "", FormatJSON, true, true, `"junit"`},
		{"", "", FormatJSON, true, true, `"html"`},
		{"", "", FormatJSON, true, true, `7`},
		{"", "", FormatJSON, false, false, `null`},
	}
	for _, tt := range tests {
		r, _ := http.NewRequest("POST", "/api/external/budget-check"+tt.query, nil)
		if tt.accept != "" {
			r.Header.Set("Accept", tt.accept)
		}
		format, explicit, problem := FormatOf(r, json.RawMessage(tt.body))
		if format != tt.format || explicit != tt.explicit || (problem != "") != tt.problem {
			t.Errorf("%q body %s Accept %q: %s %v %q; want %s %v problem %v", tt.query, tt.body, tt.accept, format, explicit, problem, tt.format, tt.explicit, tt.problem)
		}
	}
}

// BenchmarkFormatOf: what choosing the format costs a budget check, the interface's plain
// request (no query, Accept: application/json) and a pipeline's Markdown one.
func BenchmarkFormatOf(b *testing.B) {
	for _, c := range []struct{ name, query, accept string }{
		{"plain", "", "application/json"},
		{"markdown", "", "text/markdown"},
		{"junit-query", "?format=junit", ""},
	} {
		r, _ := http.NewRequest("POST", "/api/external/budget-check"+c.query, nil)
		r.Header.Set("Accept", c.accept)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				FormatOf(r, nil)
			}
		})
	}
}
