package ci

import (
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

// FormatOf is the format a budget check asks for: the format query parameter when given
// (json, markdown, junit; anything else is a 422), else the Accept header's preferred type
// among application/json, text/markdown and application/xml (application/junit+xml and
// text/xml too), JSON when it names none of them. explicit says whether either asked for a
// format at all: a request that did not keeps the interface's JSON exactly.
func FormatOf(r *http.Request) (format string, explicit bool, problem string) {
	accept := r.Header.Get("Accept")
	if r.URL.RawQuery == "" && !strings.Contains(accept, "markdown") && !strings.Contains(accept, "xml") {
		return FormatJSON, false, "" // the interface's check, on its hot path: nothing to parse
	}
	if q := r.URL.Query(); q.Has("format") {
		switch f := strings.ToLower(q.Get("format")); f {
		case FormatJSON, FormatMarkdown, FormatJUnit:
			return f, true, ""
		case "md", "gfm":
			return FormatMarkdown, true, ""
		case "xml":
			return FormatJUnit, true, ""
		}
		return FormatJSON, true, "Expected json, markdown or junit"
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
