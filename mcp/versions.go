package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// This file is what differs between MCP protocol versions (DESIGN §12): which versions are
// spoken, how a request's version is found, and the 2026-07-28 (modern) request rules. The tools
// are the same in every era; only their envelopes differ, and tools.go asks the era for those.

// era is a protocol version the server speaks, ordered: a later era has everything an earlier
// legacy one has.
type era int

const (
	era20250326 era = iota // the interface's version: text content only, batches, -32602 for bad arguments
	era20250618            // + outputSchema, structuredContent, title, resource_link; no batches
	era20251125            // + tool icons; invalid arguments are tool execution errors
	eraModern              // 2026-07-28: no initialize; _meta, headers, resultType and cache hints on every request
	eraCount
)

// ModernVersion is the stateless revision the server speaks beside the legacy ones.
const ModernVersion = "2026-07-28"

// SupportedVersions are the protocol versions spoken, newest first (server/discover, and the
// data of an UnsupportedProtocolVersion error).
var SupportedVersions = []string{ModernVersion, "2025-11-25", "2025-06-18", "2025-03-26"}

// legacyVersions maps the MCP-Protocol-Version header of a legacy request to its era. No header
// is 2025-03-26 (the transport's rule for clients older than the header); 2024-11-05 was always
// accepted and is served as 2025-03-26.
var legacyVersions = map[string]era{"": era20250326, "2024-11-05": era20250326,
	"2025-03-26": era20250326, "2025-06-18": era20250618, "2025-11-25": era20251125}

// legacyEra is the era of a legacy request with that MCP-Protocol-Version header.
func legacyEra(header string) (era, bool) {
	e, ok := legacyVersions[header]
	return e, ok
}

// negotiate is initialize's answer: the client's protocolVersion when it is a legacy version the
// server speaks, else the latest legacy one.
func negotiate(params json.RawMessage) string {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(params, &p)
	switch p.ProtocolVersion {
	case "2025-03-26", "2025-06-18", "2025-11-25":
		return p.ProtocolVersion
	}
	return "2025-11-25"
}

// Reserved _meta keys of 2026-07-28.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// metaProtocolVersionKey is metaProtocolVersion as a body holds it unescaped.
var metaProtocolVersionKey = []byte(`"` + metaProtocolVersion + `"`)

// modernParams is what the modern rules read of a request's params.
type modernParams struct {
	Meta   map[string]json.RawMessage `json:"_meta"`
	Name   *string                    `json:"name"`
	URI    *string                    `json:"uri"`
	TaskID *string                    `json:"taskId"`
}

// isModern tells a 2026-07-28 request from a legacy one: it names 2026-07-28 in its header, or
// carries a protocol version in _meta that is not a legacy one (a newer version, answered with
// UnsupportedProtocolVersion so the client retries with one spoken here). Anything else is
// legacy, so an unknown header without _meta keeps failing as it always has and clients fall back.
func isModern(header string, body []byte) bool {
	if header == ModernVersion {
		return true
	}
	// Without a backslash the reserved key can only be written as itself, so a body that does
	// not hold it is legacy without decoding it (a second full decode of every legacy call).
	if bytes.IndexByte(body, '\\') < 0 && !bytes.Contains(body, metaProtocolVersionKey) {
		return false
	}
	var m struct {
		Params modernParams `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	v, ok := m.Params.Meta[metaProtocolVersion]
	if !ok {
		return false
	}
	var version string
	if json.Unmarshal(v, &version) != nil {
		return true // malformed: the modern rules answer it (-32602)
	}
	_, legacy := legacyVersions[version]
	return !legacy || version == ""
}

// serverMeta identifies the server in every modern result's _meta.
var serverMeta = map[string]any{metaServerInfo: map[string]string{"name": ServerName, "version": ServerVersion, "title": ServerTitle}}

// withServerMeta is a modern result's _meta: the server's identity beside what the result has.
func withServerMeta(meta map[string]any) map[string]any {
	if len(meta) == 0 {
		return serverMeta
	}
	out := map[string]any{metaServerInfo: serverMeta[metaServerInfo]}
	for k, v := range meta {
		out[k] = v
	}
	return out
}

// complete marks a modern result final and signs it with the server's identity.
func complete(result map[string]any) map[string]any {
	result["resultType"] = "complete"
	result["_meta"] = serverMeta
	return result
}

// cacheable adds 2026-07-28's cache hints: the tool list and the discovery result are the same for
// every caller and change only with a deployment.
func cacheable(result map[string]any) map[string]any {
	result["ttlMs"] = 3600000
	result["cacheScope"] = "public"
	return result
}

// serveModern answers a 2026-07-28 request. In order: the JSON-RPC envelope (400, -32600); the
// _meta every request carries, protocol version and client capabilities (400, -32602); the
// MCP-Protocol-Version header equal to it (400, -32020); the version spoken (400, -32022 with
// data.supported); Mcp-Method, and Mcp-Name for tools/call, equal to the body (400, -32020); the
// method known (404, -32601). Every result carries resultType and the server's identity.
func (s *Server) serveModern(ctx context.Context, r Request, body []byte) (int, []byte) {
	m, id, owed, bad := parse(body)
	if bad != nil {
		return 400, encode(*bad)
	}
	if !owed {
		return 202, nil
	}
	fail := func(status, code int, msg string, data any) (int, []byte) {
		return status, encode(response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg, Data: data}})
	}
	var p modernParams
	if len(m.Params) > 0 && string(m.Params) != "null" && (m.Params[0] != '{' || json.Unmarshal(m.Params, &p) != nil) {
		return fail(400, CodeInvalidParams, "Invalid params: params must be an object carrying _meta", nil)
	}
	var version string
	caps := bytes.TrimSpace(p.Meta[metaClientCapabilities])
	if json.Unmarshal(p.Meta[metaProtocolVersion], &version) != nil || version == "" || len(caps) == 0 || caps[0] != '{' {
		return fail(400, CodeInvalidParams, "Invalid params: _meta must carry "+metaProtocolVersion+" (a string) and "+
			metaClientCapabilities+" (an object) on every request", nil)
	}
	if h := r.Header.Get("MCP-Protocol-Version"); h != version {
		return fail(400, CodeHeaderMismatch, "Header mismatch: MCP-Protocol-Version header "+quote(h)+" does not match _meta protocol version "+quote(version), nil)
	}
	if version != ModernVersion {
		return fail(400, CodeUnsupportedProtocolVersion, "Unsupported protocol version",
			map[string]any{"supported": SupportedVersions, "requested": version})
	}
	if h := r.Header.Get("Mcp-Method"); h != *m.Method {
		return fail(400, CodeHeaderMismatch, "Header mismatch: Mcp-Method header "+quote(h)+" does not match body method "+quote(*m.Method), nil)
	}
	// Mcp-Name mirrors the field that names what the request acts on.
	field, name := "", (*string)(nil)
	switch *m.Method {
	case "tools/call":
		field, name = "name", p.Name
	case "resources/read":
		field, name = "uri", p.URI
	case "tasks/get", "tasks/update", "tasks/cancel":
		field, name = "taskId", p.TaskID
	}
	if name != nil {
		if h, ok := headerName(r.Header.Get("Mcp-Name")); !ok || h != *name {
			return fail(400, CodeHeaderMismatch, "Header mismatch: Mcp-Name header "+quote(r.Header.Get("Mcp-Name"))+" does not match params."+field+" "+quote(*name), nil)
		}
	}
	if !declares(caps, extUI) {
		ctx = context.WithValue(ctx, noViewsKey{}, true)
	}
	var result any
	switch *m.Method {
	case "server/discover":
		result = complete(cacheable(map[string]any{
			"supportedVersions": SupportedVersions,
			"capabilities":      uiCapabilities(true),
			"instructions":      instructions,
		}))
	case "tools/list":
		result = s.lists[eraModern]
	case "resources/list":
		result = complete(cacheable(resourceList()))
	case "resources/read":
		out, err := readResource(eraModern, m.Params)
		if err != nil {
			return fail(200, err.Code, err.Message, err.Data)
		}
		result = complete(cacheable(out))
	case "tools/call":
		out, err := s.callTool(ctx, r.UserID, eraModern, m.Params, nil)
		if err == errUnavailable {
			return fail(503, err.Code, err.Message, nil)
		}
		if err != nil && err.Code == CodeInsufficientScope {
			return fail(403, err.Code, err.Message, nil)
		}
		if err != nil {
			return fail(200, err.Code, err.Message, nil)
		}
		tr := out.(toolResult)
		tr.ResultType = "complete"
		tr.Meta = withServerMeta(tr.Meta)
		result = tr
		if t := toolIndex[*p.Name]; t.Task && declares(caps, extTasks) {
			if result, err = s.startTask(ctx, r.UserID, tr); err == errUnavailable {
				return fail(503, err.Code, err.Message, nil)
			} else if err != nil {
				return fail(200, err.Code, err.Message, nil)
			}
		}
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !declares(caps, extTasks) { // the methods are the extension's: only a client declaring it may use them
			return fail(400, CodeMissingClientCapability, "Missing required client capability: "+*m.Method+" needs the "+extTasks+" extension",
				map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{extTasks: map[string]any{}}}})
		}
		out, err := s.taskCall(ctx, r.UserID, *m.Method, m.Params)
		switch {
		case err == errUnavailable:
			return fail(503, err.Code, err.Message, nil)
		case err != nil && err.Code == CodeInsufficientScope:
			return fail(403, err.Code, err.Message, nil)
		case err != nil:
			return fail(200, err.Code, err.Message, nil)
		}
		result = out
	default:
		return fail(404, CodeMethodNotFound, "Unknown method: "+*m.Method, nil)
	}
	return 200, encode(response{JSONRPC: "2.0", ID: id, Result: result})
}

// headerName decodes an Mcp-Name value: plain, or =?base64?...?= for names a header cannot carry.
func headerName(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	if rest, ok := strings.CutPrefix(v, "=?base64?"); ok {
		enc, ok := strings.CutSuffix(rest, "?=")
		if !ok {
			return "", false
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		return string(b), err == nil
	}
	return v, true
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
