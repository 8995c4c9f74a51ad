package ci

import (
	"cmp"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Formats of the budget check's answer.
const (
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
	FormatJUnit    = "junit"
)

// Content types of the formats: GitHub-flavoured Markdown (RFC 7763, variant from RFC 7764)
// and JUnit's XML.
const (
	MarkdownType = "text/markdown; charset=utf-8; variant=GFM"
	JUnitType    = "application/xml; charset=utf-8"
)

// formatExpected is the 422's field error of a format that is none.
const formatExpected = "Expected json, markdown or junit"

// formatNamed is the format a format parameter names, "" when it names none.
func formatNamed(word string) string {
	switch f := strings.ToLower(word); f {
	case FormatJSON, FormatMarkdown, FormatJUnit:
		return f
	case "md", "gfm":
		return FormatMarkdown
	case "xml":
		return FormatJUnit
	}
	return ""
}

// FormatOf is the format a budget check asks for: the format parameter when given, in the
// query or as the body's "format" member (body, raw; null or absent is not given) (json,
// markdown, junit; anything else, or the two disagreeing, is a 422), else the Accept header's
// preferred type among application/json, text/markdown and application/xml
// (application/junit+xml and text/xml too), JSON when it names none of them. explicit says
// whether any asked for a format at all: a request that did not keeps the interface's JSON
// exactly.
func FormatOf(r *http.Request, body json.RawMessage) (format string, explicit bool, problem string) {
	inBody := len(body) > 0 && string(body) != "null"
	accept := r.Header.Get("Accept")
	if !inBody && r.URL.RawQuery == "" && !strings.Contains(accept, "markdown") && !strings.Contains(accept, "xml") {
		return FormatJSON, false, "" // the interface's check, on its hot path: nothing to parse
	}
	if q := r.URL.Query(); inBody || q.Has("format") {
		var fromBody, fromQuery string
		if inBody {
			var word string
			if json.Unmarshal(body, &word) != nil {
				return FormatJSON, true, formatExpected
			}
			if fromBody = formatNamed(word); fromBody == "" {
				return FormatJSON, true, formatExpected
			}
		}
		if q.Has("format") {
			if fromQuery = formatNamed(q.Get("format")); fromQuery == "" {
				return FormatJSON, true, formatExpected
			}
		}
		if fromBody != "" && fromQuery != "" && fromBody != fromQuery {
			return FormatJSON, true, "The body asks for " + fromBody + " and the query for " + fromQuery + ": give one format"
		}
		return cmp.Or(fromBody, fromQuery), true, ""
	}
	best, bestQ := "", 0.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		var f string
		switch mt {
		case "text/markdown", "text/x-markdown":
			f = FormatMarkdown
		case "application/xml", "text/xml", "application/junit+xml":
			f = FormatJUnit
		case "application/json":
			f = FormatJSON
		default:
			continue
		}
		if q > bestQ {
			best, bestQ = f, q
		}
	}
	if best == "" || best == FormatJSON {
		return FormatJSON, false, ""
	}
	return best, true, ""
}
