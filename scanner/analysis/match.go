package analysis

import (
	"net/url"
	"regexp"
	"strings"

	"sitepulse/store"
)

// This file follows a page's requests from one run to the next (issue 42 item 2): the same
// request under a cache-busting query, on https instead of http, or renamed by a build (a
// content hash, a version, a UUID in its name) is one request that grew or shrank, not one
// removed and one added. A request is new only when no step below matches it.

// How a request of After was matched to one of Before: the steps of matchSteps, in turn.
const (
	MatchedURL      = "url"      // the same URL
	MatchedNoQuery  = "noQuery"  // the same URL but for its query (and fragment)
	MatchedHostPath = "hostPath" // the same host and path, any scheme, port or query
	MatchedName     = "name"     // the same normalised name (NormalisedName): renamed by a build
	MatchedLCP      = "lcp"      // the resource of the same LCP element (compareLCP), another file
)

// matchSteps are the keys requests are matched by, the strictest first: each step pairs the
// requests the steps before it left unpaired.
var matchSteps = []struct {
	name string
	key  func(raw string) string
}{
	{MatchedURL, func(raw string) string { return raw }},
	{MatchedNoQuery, withoutQuery},
	{MatchedHostPath, hostPath},
	{MatchedName, NormalisedName},
}

// withoutQuery is a URL without its query and fragment.
func withoutQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.RawQuery, u.Fragment, u.ForceQuery = "", "", false
	return u.String()
}

// hostPath is a URL's host name and path: any scheme, port, query.
func hostPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Hostname() + u.EscapedPath()
}

// What NormalisedName takes out of a name, as Lighthouse CI's audit-diff-finder does
// (replaceNondeterministicStrings: UUIDs, ports, hashes in file names), and version segments.
var (
	uuidPart = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	// versionPart is a dotted version: "/1.2.3/", "@4.17.21", "-3.6.0.min.js", "/v2.1/".
	versionPart = regexp.MustCompile(`([/@\-_])v?\d+(\.\d+)+`)
	// namePart splits a file name into its parts: "app", ".3f9a2c1b", ".js".
	namePart = regexp.MustCompile(`[.\-~]?[^.\-~]+`)
)

// NormalisedName is a URL with what changes from build to build taken out: its scheme, port,
// query and fragment, UUIDs, version segments, and content hashes of its file name. Two
// requests with the same normalised name are one request renamed by a build.
func NormalisedName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	p := uuidPart.ReplaceAllString(u.EscapedPath(), "UUID")
	p = versionPart.ReplaceAllString(p, "${1}VERSION")
	dir, file := "", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, file = p[:i+1], p[i+1:]
	}
	parts := namePart.FindAllString(file, -1)
	for i := 1; i < len(parts)-1; i++ { // neither the name's first part nor its extension
		if contentHash(parts[i][1:]) {
			parts[i] = parts[i][:1] + "HASH"
		}
	}
	return u.Hostname() + dir + strings.Join(parts, "")
}

// contentHash answers whether a part of a file name is a build's content hash: 6 or more hex
// digits ("3f9a2c1b", webpack's), or 8 or more letters, digits, "_" with digits and letters
// both ("BxK3a9_f", Vite's).
func contentHash(s string) bool {
	digit, letter, hex := false, false, true
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F':
			letter = true
		case r >= 'g' && r <= 'z' || r >= 'G' && r <= 'Z' || r == '_':
			letter, hex = true, false
		default:
			return false
		}
	}
	return digit && (hex && len(s) >= 6 || letter && len(s) >= 8)
}

// matching is which request of Before each request of After is (pair: an index of Before's
// requests, -1 for none) and by which step (by: a Matched* name, "" for none).
type matching struct {
	pair []int
	by   []string
}

// match pairs each request of a with the request of b it is the same as (matchURLs).
func match(b, a *store.Explain) matching {
	return matchURLs(urlsOf(b.Requests), urlsOf(a.Requests))
}

func urlsOf(rs []store.Request) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.URL
	}
	return out
}

// matchURLs pairs each URL of a with the URL of b it is the same as, step by step
// (matchSteps), each at most once. Within a step, a URL pairs with the unpaired one of the same
// key whose query shares most of its parameters, the earliest on a tie: requests of one path
// that differ by their query each pair with their own.
func matchURLs(b, a []string) matching {
	m := matching{pair: make([]int, len(a)), by: make([]string, len(a))}
	for i := range m.pair {
		m.pair[i] = -1
	}
	used := make([]bool, len(b))
	queries := map[string]url.Values{} // each URL's query, parsed once
	shared := func(x, y string) int { return sharedParams(queryOf(queries, x), queryOf(queries, y)) }
	for _, step := range matchSteps {
		byKey := map[string][]int{}
		for j, u := range b {
			if !used[j] {
				k := step.key(u)
				byKey[k] = append(byKey[k], j)
			}
		}
		for i, u := range a {
			if m.pair[i] >= 0 {
				continue
			}
			k := step.key(u)
			js := byKey[k]
			if len(js) == 0 {
				continue
			}
			best := 0
			for n := 1; n < len(js); n++ {
				if shared(b[js[n]], u) > shared(b[js[best]], u) {
					best = n
				}
			}
			j := js[best]
			m.pair[i], m.by[i], used[j] = j, step.name, true
			byKey[k] = append(js[:best:best], js[best+1:]...)
		}
	}
	return m
}

// queryOf is a URL's query parameters, parsed once into cache.
func queryOf(cache map[string]url.Values, raw string) url.Values {
	q, ok := cache[raw]
	if !ok {
		if u, err := url.Parse(raw); err == nil {
			q = u.Query()
		}
		cache[raw] = q
	}
	return q
}

// sharedParams is how many query parameters (name and value) two queries share.
func sharedParams(qx, qy url.Values) int {
	n := 0
	for k, vs := range qx {
		for _, v := range vs {
			for _, w := range qy[k] {
				if v == w {
					n++
				}
			}
		}
	}
	return n
}
