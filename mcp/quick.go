package mcp

// parseQuick decodes, in one pass, a lone JSON-RPC request in the shape clients write it:
//
//	{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"…"}}}
//
// The decoder's path checks the body (json.Valid), then decodes the message, params and
// arguments each again; here the body is read once. Only what that path reads the same way is
// taken: an object of the keys jsonrpc ("2.0"), id (a number or a string), method (a string) and
// optionally params, each once and written exactly so (encoding/json also matches "ID" or
// "Method", and lets the last of two equal keys win); strings of printable ASCII without escapes
// (no decoding to do, no invalid UTF-8 to replace); params an object of name (a string) and
// arguments (an object of distinct keys with string values) or nothing. Anything else, every
// malformed body included, is not ok, and goes the decoder's way to the answers it always had
// (TestQuickParseAgrees and FuzzQuickParse hold the two to each other).

// toolCall is a tools/call's params as parseQuick read them: the tool's name and its arguments
// (never nil).
type toolCall struct {
	name string
	args args
}

// parseQuick returns the message as parse would decode it, with its tools/call params in call
// when they are of the shape above, and whether body was of that shape: then body is valid
// JSON. ID and Params are slices of body.
func parseQuick(body []byte) (m message, ok bool) {
	if len(body) == 0 || body[0] != '{' { // as parse: ServeRequest has trimmed the body
		return m, false
	}
	q := quickScan{b: body}
	const jsonrpc, id, method, params = 1, 2, 4, 8
	var seen uint8
	once := func(k uint8) bool {
		if seen&k != 0 {
			return false
		}
		seen |= k
		return true
	}
	ok = q.object(func(key []byte) bool {
		switch string(key) {
		case "jsonrpc":
			v, ok := q.str()
			m.JSONRPC = "2.0"
			return ok && string(v) == "2.0" && once(jsonrpc)
		case "id":
			q.ws()
			start, ok := q.i, false
			if q.i < len(q.b) && q.b[q.i] == '"' {
				_, ok = q.str()
			} else {
				ok = q.number()
			}
			m.ID = body[start:q.i]
			return ok && once(id)
		case "method":
			v, ok := q.str()
			if !ok || !once(method) {
				return false
			}
			m.Method = methodName(v)
			return true
		case "params":
			q.ws()
			start := q.i
			call, ok := q.params()
			m.Params, m.call = body[start:q.i], call
			return ok && once(params)
		}
		return false
	})
	q.ws()
	return m, ok && seen&(jsonrpc|id|method) == jsonrpc|id|method && q.i == len(q.b)
}

// methods are the methods a client sends, whose names parseQuick answers without allocating.
var methods = func() map[string]*string {
	m := map[string]*string{}
	for _, name := range []string{"tools/call", "tools/list", "initialize", "ping", "resources/list", "resources/read"} {
		m[name] = &name
	}
	return m
}()

// argNames are the argument names of every tool, which parseQuick reads without allocating.
var argNames = func() map[string]string {
	m := map[string]string{}
	for _, t := range tools {
		for name := range t.Input.Properties {
			m[name] = name
		}
	}
	return m
}()

func methodName(v []byte) *string {
	if p, ok := methods[string(v)]; ok {
		return p
	}
	s := string(v)
	return &s
}

// quickScan reads JSON of parseQuick's shape from b at i.
type quickScan struct {
	b []byte
	i int
}

// ws skips JSON whitespace.
func (q *quickScan) ws() {
	for q.i < len(q.b) {
		switch q.b[q.i] {
		case ' ', '\t', '\n', '\r':
			q.i++
		default:
			return
		}
	}
}

// eat reads byte c after whitespace.
func (q *quickScan) eat(c byte) bool {
	q.ws()
	if q.i < len(q.b) && q.b[q.i] == c {
		q.i++
		return true
	}
	return false
}

// object reads an object, calling member after each key to read its value; false when it is not
// an object or member says so.
func (q *quickScan) object(member func(key []byte) bool) bool {
	if !q.eat('{') {
		return false
	}
	if q.eat('}') {
		return true
	}
	for {
		key, ok := q.str()
		if !ok || !q.eat(':') || !member(key) {
			return false
		}
		if q.eat('}') {
			return true
		}
		if !q.eat(',') {
			return false
		}
	}
}

// str reads a string of printable ASCII without escapes and returns what is between its quotes.
func (q *quickScan) str() ([]byte, bool) {
	q.ws()
	if q.i >= len(q.b) || q.b[q.i] != '"' {
		return nil, false
	}
	start := q.i + 1
	for j := start; j < len(q.b); j++ {
		switch c := q.b[j]; {
		case c == '"':
			q.i = j + 1
			return q.b[start:j], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// number reads a JSON number (RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?).
func (q *quickScan) number() bool {
	b, j := q.b, q.i
	digits := func() bool {
		d := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > d
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j < len(b) && b[j] == '0' {
		j++
	} else if !digits() {
		return false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return false
		}
	}
	q.i = j
	return true
}

// params reads params: call is nil when they name no tool.
func (q *quickScan) params() (call *toolCall, ok bool) {
	var c toolCall
	const name, arguments = 1, 2
	var seen uint8
	ok = q.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			v, ok := q.str()
			if !ok || seen&name != 0 {
				return false
			}
			seen |= name
			if t, known := toolIndex[string(v)]; known {
				c.name = t.Name
			} else {
				c.name = string(v)
			}
			return true
		case "arguments":
			if seen&arguments != 0 {
				return false
			}
			seen |= arguments
			c.args = args{}
			return q.object(func(key []byte) bool {
				v, ok := q.str()
				if _, dup := c.args[string(key)]; !ok || dup {
					return false
				}
				name, known := argNames[string(key)]
				if !known {
					name = string(key)
				}
				c.args[name] = string(v)
				return true
			})
		}
		return false
	})
	if !ok || seen&name == 0 {
		return nil, ok
	}
	if c.args == nil {
		c.args = args{}
	}
	return &c, true
}
