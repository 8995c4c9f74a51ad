package lighthouse

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The decoding of a report in one pass (issue 46 item 4). encoding/json reads a 340 kB PSI answer
// several times over (json.Unmarshal validates all of it first, then decodes it, skipping byte by
// byte the 110 kB of base64 screenshots and the 27 kB full-page screenshot nobody reads): 85% of
// an ingest's CPU. decodePSI and decodeLHR walk the answer's outer objects (the answer, its
// Lighthouse report, its categories, its audits, each audit) themselves, skipping what is not read with a
// validating skipper that moves eight bytes at a time through strings, and hand the small parts
// they read (scores, categories, entities...) to encoding/json. They produce exactly what
// json.Unmarshal into psiResponse (or lhr) produces, Details holding the same bytes, or say they
// cannot (ok false): on input that is not valid JSON, has a key that is not one of the fields read
// but matches one ignoring case or through escapes, a field read twice in one object, a value of
// another type, or a number out of range. The caller then runs json.Unmarshal, whose answer,
// error included, is the rule; FuzzExtract holds the two to each other.

// maxDepth is encoding/json's limit on nesting: deeper input is not valid JSON to it.
const maxDepth = 10000

// skipWS returns where the whitespace at b[i] ends. PSI indents its answers (a quarter of their
// bytes are spaces): runs of spaces go eight at a time.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ':
			if i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == lsb*' ' {
				i += 8
				continue
			}
		case '\n', '\r', '\t':
		default:
			return i
		}
		i++
	}
	return i
}

// validJSON answers as json.Valid does, in a fraction of its time.
func validJSON(b []byte) bool {
	i := skipWS(b, 0)
	if i == len(b) {
		return false
	}
	end := skipValue(b, i, 0)
	return end >= 0 && skipWS(b, end) == len(b)
}

// skipValue returns the end of the JSON value that starts at b[i] (not whitespace), inside depth
// containers; -1 when there is no valid value there.
func skipValue(b []byte, i, depth int) int {
	var open []byte // the containers open inside the value, '{' or '['
	for {
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth+len(open)+1 > maxDepth {
				return -1
			}
			j := skipWS(b, i+1)
			if j < len(b) && b[j] == c+2 { // '{'+2 is '}', '['+2 is ']'
				i = j + 1
				break
			}
			open = append(open, c)
			if c == '{' {
				if i = skipKey(b, j); i < 0 {
					return -1
				}
			} else {
				i = j
			}
			continue
		case c == '"':
			i = skipString(b, i)
		case c == '-' || c >= '0' && c <= '9':
			i = skipNumber(b, i)
		case c == 't':
			i = skipLiteral(b, i, "true")
		case c == 'f':
			i = skipLiteral(b, i, "false")
		case c == 'n':
			i = skipLiteral(b, i, "null")
		default:
			return -1
		}
		if i < 0 {
			return -1
		}
		// A value ended: the next member or element, or the end of containers.
		for next := false; !next; {
			if len(open) == 0 {
				return i
			}
			if i = skipWS(b, i); i >= len(b) {
				return -1
			}
			top := open[len(open)-1]
			switch b[i] {
			case ',':
				i = skipWS(b, i+1)
				if top == '{' {
					if i = skipKey(b, i); i < 0 {
						return -1
					}
				}
				next = true
			case top + 2:
				open = open[:len(open)-1]
				i++
			default:
				return -1
			}
		}
	}
}

// skipKey reads `"key" :` at b[i] and returns where the value starts, -1 if it is not there.
func skipKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = skipString(b, i); i < 0 {
		return -1
	}
	if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipWS(b, i+1)
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain8 answers whether none of the eight bytes of x is a quote, a backslash or a control
// character (below 0x20): the bytes a string runs over unread.
func plain8(x uint64) bool {
	q, s := x^(lsb*'"'), x^(lsb*'\\')
	return ((q-lsb)&^q|(s-lsb)&^s|(x-lsb*0x20)&^x)&msb == 0
}

// noControl answers whether s holds no control character (below 0x20), eight bytes at a time.
func noControl(s []byte) bool {
	for ; len(s) >= 32; s = s[32:] {
		x0, x1 := binary.LittleEndian.Uint64(s), binary.LittleEndian.Uint64(s[8:])
		x2, x3 := binary.LittleEndian.Uint64(s[16:]), binary.LittleEndian.Uint64(s[24:])
		if ((x0-lsb*0x20)&^x0|(x1-lsb*0x20)&^x1|(x2-lsb*0x20)&^x2|(x3-lsb*0x20)&^x3)&msb != 0 {
			return false
		}
	}
	for _, c := range s {
		if c < 0x20 {
			return false
		}
	}
	return true
}

// skipString returns the end of the string that starts at b[i] ('"'), -1 if it is not valid. A
// string without escapes (a data URI, most of them) ends at the first quote, found as
// bytes.IndexByte finds a byte, many at a time.
func skipString(b []byte, i int) int {
	i++
	if q := bytes.IndexByte(b[i:], '"'); q >= 0 {
		if s := b[i : i+q]; bytes.IndexByte(s, '\\') < 0 {
			if !noControl(s) {
				return -1
			}
			return i + q + 1
		}
	}
	for {
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c != '\\':
			i++
		case i+1 >= len(b):
			return -1
		case b[i+1] == 'u':
			if i+6 > len(b) {
				return -1
			}
			for _, h := range b[i+2 : i+6] {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return -1
				}
			}
			i += 6
		default:
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			default:
				return -1
			}
		}
	}
}

// skipValid returns the end of the value that starts at b[i] in valid JSON: it tells strings
// apart (endOfString) and counts brackets, validating nothing. On bytes that are not valid JSON
// it returns some end within b, or -1, never panicking.
func skipValid(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		for depth > 0 && i+8 <= len(b) && noStructure8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8 // inside a container: numbers, literals, commas, colons and indentation
		}
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '"':
			if i = endOfString(b, i); i < 0 || depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth <= 0 {
				return i + 1
			}
		default:
			if depth == 0 { // a number or a literal: up to what ends it
				for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
					i++
				}
				return i
			}
		}
		i++
	}
	return -1
}

// noStructure8 answers whether none of the eight bytes of x is a quote or a bracket: x|0x20 turns
// '[' into '{' and ']' into '}', and no other byte into either.
func noStructure8(x uint64) bool {
	y := x | lsb*0x20
	o, c, q := y^(lsb*'{'), y^(lsb*'}'), x^(lsb*'"')
	return ((o-lsb)&^o|(c-lsb)&^c|(q-lsb)&^q)&msb == 0
}

// endOfString returns the end of the string that starts at b[i] ('"') in valid JSON: after the
// first quote no odd run of backslashes escapes, found as bytes.IndexByte finds a byte.
func endOfString(b []byte, i int) int {
	for j := i + 1; ; {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		k := j
		for k > i+1 && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j + 1
		}
		j++
	}
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// skipNumber returns the end of the number that starts at b[i], -1 if it is not one.
func skipNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if j := skipDigits(b, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := skipDigits(b, i); j > i {
			i = j
		} else {
			return -1
		}
	}
	return i
}

func skipLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// walker reads one document; failed is set at the first thing it cannot read as json.Unmarshal
// would, after which its results are not to be used. A walker of valid JSON (valid: an audit's
// details, which the report's walk validated) skips what it does not read without validating
// it again (skipValid).
type walker struct {
	b      []byte
	failed bool
	valid  bool
	// What the report's walk decodes each audit and audit reference into before it is kept:
	// one of each for the walk, not one on the heap for every audit (a value a closure writes
	// escapes), and the references of a category before they are kept at their number.
	audit audit
	ref   auditRef
	refs  []auditRef
	// The strings that repeat, each copied once (intern).
	interned []string
}

// object calls member for each member of the object at b[i] (depth containers around it), with
// its key as written (no quotes) and where its value starts; member returns the value's end. It
// returns the object's end; -1 (failed) when it is no valid object or a member failed.
func (w *walker) object(i, depth int, member func(key []byte, v int) int) int {
	b := w.b
	if w.failed || i >= len(b) || b[i] != '{' || depth+1 > maxDepth {
		return w.fail()
	}
	if i = skipWS(b, i+1); i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		k := i + 1
		v := skipKey(b, i)
		if v < 0 || v >= len(b) { // members read b[v]
			return w.fail()
		}
		key := b[k : bytes.LastIndexByte(b[k:v], '"')+k]
		if i = member(key, v); i < 0 || w.failed {
			return w.fail()
		}
		if i = skipWS(b, i); i >= len(b) {
			return w.fail()
		}
		switch b[i] {
		case '}':
			return i + 1
		case ',':
			i = skipWS(b, i+1)
		default:
			return w.fail()
		}
	}
}

// array calls elem for where each element of the array at b[i] starts; elem returns its end.
func (w *walker) array(i, depth int, elem func(v int) int) int {
	b := w.b
	if w.failed || i >= len(b) || b[i] != '[' || depth+1 > maxDepth {
		return w.fail()
	}
	if i = skipWS(b, i+1); i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i >= len(b) { // elements read b[i]
			return w.fail()
		}
		if i = elem(i); i < 0 || w.failed {
			return w.fail()
		}
		if i = skipWS(b, i); i >= len(b) {
			return w.fail()
		}
		switch b[i] {
		case ']':
			return i + 1
		case ',':
			i = skipWS(b, i+1)
		default:
			return w.fail()
		}
	}
}

func (w *walker) fail() int {
	w.failed = true
	return -1
}

// skip validates the value at b[i] and returns its end.
func (w *walker) skip(i, depth int) int {
	var end int
	if w.valid {
		end = skipValid(w.b, i)
	} else {
		end = skipValue(w.b, i, depth)
	}
	if end < 0 {
		w.failed = true
	}
	return end
}

// isNull answers whether the value at b[i] is null (json.Unmarshal leaves a field as it is for
// null, or sets a pointer, map or slice to nil).
func (w *walker) isNull(i int) bool { return len(w.b)-i >= 4 && string(w.b[i:i+4]) == "null" }

// unmarshal decodes the value at b[i] into v with encoding/json, as the whole document's
// json.Unmarshal would decode it in place (v is a zero field; a field read twice fails before).
func (w *walker) unmarshal(i, depth int, v any) int {
	end := w.skip(i, depth)
	if end >= 0 && json.Unmarshal(w.b[i:end], v) != nil {
		return w.fail()
	}
	return end
}

// str decodes a string field: the bytes between its quotes when they need no unescaping and are
// valid UTF-8 (json.Unmarshal's own fast path), else through json.Unmarshal.
func (w *walker) str(i, depth int, s *string) int { return w.strOr(i, depth, s, none) }

// strOr is str keeping the string have gives for those bytes, when it gives one, rather than a
// copy of them: a string that repeats (an audit's id is its key, its scoreDisplayMode one of
// seven) is not copied again for every audit (with the walker's own audit and reference values,
// 2,782 allocations a report were 1,874: BenchmarkExtractPSIMobile).
func (w *walker) strOr(i, depth int, s *string, have func(raw []byte) (string, bool)) int {
	if w.isNull(i) {
		return i + 4
	}
	if w.b[i] != '"' {
		return w.fail()
	}
	var end int
	if w.valid {
		end = endOfString(w.b, i)
	} else {
		end = skipString(w.b, i)
	}
	if end < 0 {
		return w.fail()
	}
	if raw := w.b[i+1 : end-1]; bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		if v, ok := have(raw); ok {
			*s = v
		} else {
			*s = string(raw)
		}
		return end
	}
	return w.unmarshal(i, depth, s)
}

func none([]byte) (string, bool) { return "", false }

// intern is strOr's have for a string that repeats in the report (an audit's scoreDisplayMode,
// one of seven; an audit reference's group): each is copied once into w.interned.
func (w *walker) intern(raw []byte) (string, bool) {
	for _, v := range w.interned {
		if string(raw) == v {
			return v, true
		}
	}
	v := string(raw)
	w.interned = append(w.interned, v)
	return v, true
}

// num decodes a float64 field (null leaves it as it is).
func (w *walker) num(i int, f *float64) int {
	if w.isNull(i) {
		return i + 4
	}
	if c := w.b[i]; c != '-' && (c < '0' || c > '9') {
		return w.fail()
	}
	end := skipNumber(w.b, i)
	if end < 0 {
		return w.fail()
	}
	v, err := strconv.ParseFloat(string(w.b[i:end]), 64)
	if err != nil {
		return w.fail()
	}
	*f = v
	return end
}

// numPtr decodes a *float64 field: nil for null.
func (w *walker) numPtr(i int, f **float64) int {
	if w.isNull(i) {
		*f = nil
		return i + 4
	}
	var v float64
	end := w.num(i, &v)
	*f = &v
	return end
}

// fields matches an object's keys to the fields read: the index of the field whose name is key,
// -1 for a key read by no field. A key that is not one of names but that json.Unmarshal could
// match to one (other case, escapes, bytes beyond ASCII) fails the walk, as does a field seen twice
// (json.Unmarshal would merge a second object into the first).
type fields struct {
	w     *walker
	names []string
	seen  uint64
}

func (f *fields) match(key []byte) int {
	if bytes.IndexByte(key, '\\') >= 0 {
		f.w.failed = true
		return -1
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			f.w.failed = true
			return -1
		}
	}
	for n, name := range f.names {
		if string(key) == name {
			if f.seen&(1<<n) != 0 {
				f.w.failed = true
				return -1
			}
			f.seen |= 1 << n
			return n
		}
		if bytes.EqualFold(key, []byte(name)) {
			f.w.failed = true
			return -1
		}
	}
	return -1
}

var (
	psiFields   = []string{"lighthouseResult", "loadingExperience", "error"}
	lhrFields   = []string{"lighthouseVersion", "requestedUrl", "finalUrl", "finalDisplayedUrl", "configSettings", "runtimeError", "categories", "audits", "entities", "stackPacks"}
	auditFields = []string{"id", "title", "description", "score", "scoreDisplayMode", "numericValue", "displayValue", "metricSavings", "details"}
)

// decodePSI is json.Unmarshal(body, &resp) for a psiResponse, or ok false.
func decodePSI(body []byte) (resp psiResponse, ok bool) {
	w := &walker{b: body}
	i := skipWS(body, 0)
	f := fields{w: w, names: psiFields}
	end := w.object(i, 0, func(key []byte, v int) int {
		switch f.match(key) {
		case 0:
			if w.isNull(v) {
				resp.LighthouseResult = nil
				return v + 4
			}
			resp.LighthouseResult = &lhr{}
			return w.lhr(v, 1, resp.LighthouseResult)
		case 1:
			return w.unmarshal(v, 1, &resp.LoadingExperience)
		case 2:
			return w.unmarshal(v, 1, &resp.Error)
		}
		return w.skip(v, 1)
	})
	if w.failed || end < 0 || skipWS(body, end) != len(body) {
		return psiResponse{}, false
	}
	return resp, true
}

// decodeLHR is json.Unmarshal(body, &l) for a Lighthouse report, or ok false.
func decodeLHR(body []byte) (l lhr, ok bool) {
	w := &walker{b: body}
	end := w.lhr(skipWS(body, 0), 0, &l)
	if w.failed || end < 0 || skipWS(body, end) != len(body) {
		return lhr{}, false
	}
	return l, true
}

func (w *walker) lhr(i, depth int, l *lhr) int {
	f := fields{w: w, names: lhrFields}
	return w.object(i, depth, func(key []byte, v int) int {
		switch f.match(key) {
		case 0:
			return w.str(v, depth+1, &l.LighthouseVersion)
		case 1:
			return w.str(v, depth+1, &l.RequestedURL)
		case 2:
			return w.str(v, depth+1, &l.FinalURL)
		case 3:
			return w.str(v, depth+1, &l.FinalDisplayedURL)
		case 4:
			return w.unmarshal(v, depth+1, &l.ConfigSettings)
		case 5:
			return w.unmarshal(v, depth+1, &l.RuntimeError)
		case 6:
			return w.categories(v, depth+1, l)
		case 7:
			return w.audits(v, depth+1, l)
		case 8:
			return w.unmarshal(v, depth+1, &l.Entities)
		case 9:
			return w.unmarshal(v, depth+1, &l.StackPacks)
		}
		return w.skip(v, depth+1)
	})
}

func (w *walker) audits(i, depth int, l *lhr) int {
	if w.isNull(i) {
		l.Audits = nil
		return i + 4
	}
	l.Audits = make(map[string]audit, 192) // Lighthouse 12 and 13 report 150-180 audits: the map grows once
	return w.object(i, depth, func(key []byte, v int) int {
		if !w.mapKey(key) {
			return -1
		}
		if _, dup := l.Audits[string(key)]; dup {
			return w.fail()
		}
		k := string(key)
		w.audit = audit{}
		end := v + 4
		if !w.isNull(v) {
			end = w.decodeAudit(v, depth+1, k)
		}
		l.Audits[k] = w.audit
		return end
	})
}

// decodeAudit decodes the audit at b[i], whose key is key, into w.audit.
func (w *walker) decodeAudit(i, depth int, key string) int {
	a := &w.audit
	f := fields{w: w, names: auditFields}
	return w.object(i, depth, func(k []byte, v int) int {
		switch f.match(k) {
		case 0:
			return w.strOr(v, depth+1, &a.ID, func(raw []byte) (string, bool) { return key, string(raw) == key }) // an audit's id is its key
		case 1:
			return w.str(v, depth+1, &a.Title)
		case 2:
			return w.raw(v, depth+1, &a.Description)
		case 3:
			return w.numPtr(v, &a.Score)
		case 4:
			return w.strOr(v, depth+1, &a.ScoreDisplayMode, w.intern)
		case 5:
			return w.numPtr(v, &a.NumericValue)
		case 6:
			return w.str(v, depth+1, &a.DisplayValue)
		case 7:
			return w.savings(v, depth+1, a)
		case 8:
			return w.raw(v, depth+1, &a.Details)
		}
		return w.skip(v, depth+1)
	})
}

// mapKey is an object's key as a map's key, as json.Unmarshal reads it; failed on a key it
// would unescape or mend.
func (w *walker) mapKey(key []byte) bool {
	if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
		w.failed = true
		return false
	}
	return true
}

var (
	categoryFields = []string{"score", "auditRefs"}
	auditRefFields = []string{"id", "weight", "group"}
)

func (w *walker) categories(i, depth int, l *lhr) int {
	if w.isNull(i) {
		l.Categories = nil
		return i + 4
	}
	l.Categories = map[string]category{}
	return w.object(i, depth, func(key []byte, v int) int {
		if !w.mapKey(key) {
			return -1
		}
		if _, dup := l.Categories[string(key)]; dup {
			return w.fail()
		}
		var c category
		end := v + 4
		if !w.isNull(v) {
			f := fields{w: w, names: categoryFields}
			end = w.object(v, depth+1, func(key []byte, v int) int {
				switch f.match(key) {
				case 0:
					return w.numPtr(v, &c.Score)
				case 1:
					return w.auditRefs(v, depth+2, &c, l.Audits)
				}
				return w.skip(v, depth+2)
			})
		}
		l.Categories[string(key)] = c
		return end
	})
}

// auditRefs decodes a category's references to the audits (read before, in audits).
func (w *walker) auditRefs(i, depth int, c *category, audits map[string]audit) int {
	if w.isNull(i) {
		c.AuditRefs = nil
		return i + 4
	}
	w.refs = w.refs[:0]
	end := w.array(i, depth, func(e int) int {
		r := &w.ref
		*r = auditRef{}
		end := e + 4
		if !w.isNull(e) {
			f := fields{w: w, names: auditRefFields}
			end = w.object(e, depth+1, func(key []byte, v int) int {
				switch f.match(key) {
				case 0:
					return w.strOr(v, depth+2, &r.ID, func(raw []byte) (string, bool) {
						a, ok := audits[string(raw)] // the audit's id, which is its key
						return a.ID, ok && a.ID == string(raw)
					})
				case 1:
					return w.num(v, &r.Weight)
				case 2:
					return w.strOr(v, depth+2, &r.Group, w.intern)
				}
				return w.skip(v, depth+2)
			})
		}
		w.refs = append(w.refs, *r)
		return end
	})
	c.AuditRefs = append(make([]auditRef, 0, len(w.refs)), w.refs...)
	return end
}

// savings is an audit's metricSavings: a number by metric (null is 0, a key twice the last).
func (w *walker) savings(i, depth int, a *audit) int {
	if w.isNull(i) {
		a.MetricSavings = nil
		return i + 4
	}
	a.MetricSavings = map[string]float64{}
	return w.object(i, depth, func(key []byte, v int) int {
		if !w.mapKey(key) {
			return -1
		}
		var f float64
		end := w.num(v, &f)
		a.MetricSavings[string(key)] = f
		return end
	})
}

// raw is the value at b[v] as json.RawMessage.
func (w *walker) raw(v, depth int, m *json.RawMessage) int {
	end := w.skip(v, depth)
	if end >= 0 {
		*m = json.RawMessage(w.b[v:end])
	}
	return end
}

// elements calls elem with each element of the JSON array raw (valid JSON, as Details are) until
// it returns false.
func elements(raw []byte, elem func(e []byte) bool) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return
	}
	for i = skipWS(raw, i+1); i < len(raw) && raw[i] != ']'; {
		end := skipValid(raw, i)
		if end <= i || !elem(raw[i:end]) {
			return
		}
		if i = skipWS(raw, end); i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
}
