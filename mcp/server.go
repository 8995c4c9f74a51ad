// Package mcp is SitePulse's MCP server: JSON-RPC 2.0 over stateless Streamable HTTP (protocol
// 2025-03-26), with one table of read-only tools over the authenticated user's own data and one
// tool that creates a shareable client report. It knows nothing of HTTP authentication: the
// handlers package verifies the bearer credential and hands Serve the user's id and the body.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"sitepulse/store"
)

// Protocol and server identity (interface "Versioning").
const (
	ProtocolVersion = "2025-03-26"
	ServerName      = "sitepulse"
	ServerVersion   = "0.1.0"
	ServerTitle     = "SitePulse performance data"
)

// Store is the part of the store the tools read and write. Every method is scoped to the
// workspaces the user belongs to.
type Store interface {
	SitesOf(ctx context.Context, userID string) ([]store.Site, error)
	SitesIn(ctx context.Context, userID, workspaceID string) ([]store.Site, error)
	WorkspacesOf(ctx context.Context, userID string) ([]store.Workspace, error)
	Workspace(ctx context.Context, userID, workspaceID string) (store.Workspace, error)
	Site(ctx context.Context, userID, siteID string) (store.Site, error)
	BudgetInputs(ctx context.Context, userID, siteID string) (store.BudgetInputs, error)
	Scan(ctx context.Context, userID, scanID string) (store.Scan, error)
	CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error)
	PageResults(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	PageResult(ctx context.Context, userID, scanID, pagePath, strategy string) (store.PageResult, error)
	PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	CreateReportWithin(ctx context.Context, r store.Report, max int) error
}

// Fair-use limits: one account must not be able to flood the service.
const (
	// MaxBatch is the most calls one JSON-RPC batch may carry; a longer batch is one -32600 error.
	MaxBatch = 50
	// MaxActiveReports is the most unrevoked, unexpired reports one account may hold.
	MaxActiveReports = 1000
)

// Server answers MCP requests.
type Server struct {
	store   Store
	baseURL string
	now     func() time.Time
	log     *slog.Logger
	list    json.RawMessage // the tools/list result, encoded once
	metrics *metricsCache
}

// Config is what a Server needs. Now and Log default to time.Now and a discarding logger.
type Config struct {
	Store   Store
	BaseURL string // {base_url}, no trailing slash: report links start with it
	Now     func() time.Time
	Log     *slog.Logger
}

// New returns a Server.
func New(c Config) *Server {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{store: c.Store, baseURL: c.BaseURL, now: c.Now, log: c.Log, metrics: newMetricsCache(64)}
	b, err := json.Marshal(map[string]any{"tools": toolList()})
	if err != nil {
		panic(err) // the tool table is a constant; it always encodes
	}
	s.list = b
	return s
}

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

// response is a JSON-RPC response. ID is the request's id verbatim (null when it is unknown).
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

var nullID = json.RawMessage("null")

// errUnavailable answers a tool call that failed because the database cannot be reached (a
// restart, a failover). A lone request carrying it is HTTP 503, as every other surface answers
// then, so clients retry instead of reading it as a bug.
var errUnavailable = &rpcError{CodeInternal, "Internal error: the database is unavailable; retry shortly"}

// Serve answers one HTTP request body for a user: the HTTP status and the JSON body, nil for
// 202 Accepted (a body of notifications or responses only). A body that is not JSON is 400 with
// a -32700 error; a lone invalid request is 400 with -32600; a lone request that found the
// database unreachable is 503; anything else is 200.
func (s *Server) Serve(ctx context.Context, userID string, body []byte) (int, []byte) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return 400, encode(response{JSONRPC: "2.0", ID: nullID, Error: &rpcError{CodeParseError, "Parse error: the body is not valid JSON"}})
	}
	if body[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(body, &batch); err != nil {
			return 400, encode(response{JSONRPC: "2.0", ID: nullID, Error: &rpcError{CodeParseError, "Parse error: " + err.Error()}})
		}
		if len(batch) == 0 {
			return 400, encode(response{JSONRPC: "2.0", ID: nullID, Error: &rpcError{CodeInvalidRequest, "Invalid Request: empty batch"}})
		}
		if len(batch) > MaxBatch {
			return 400, encode(response{JSONRPC: "2.0", ID: nullID, Error: &rpcError{CodeInvalidRequest,
				fmt.Sprintf("Invalid Request: a batch may carry at most %d calls; this one has %d", MaxBatch, len(batch))}})
		}
		out := make([]response, 0, len(batch))
		for _, msg := range batch {
			if r, ok := s.handle(ctx, userID, msg); ok {
				out = append(out, r)
			}
		}
		if len(out) == 0 {
			return 202, nil
		}
		return 200, encode(out)
	}
	r, ok := s.handle(ctx, userID, body)
	if !ok {
		return 202, nil
	}
	if r.Error != nil && r.Error.Code == CodeInvalidRequest {
		return 400, encode(r)
	}
	if r.Error == errUnavailable {
		return 503, encode(r)
	}
	return 200, encode(r)
}

// marshal is json.Marshal without HTML escaping: payloads hold HTML snippets and selectors
// ("body > main") that a model should read as they are, not as \u003e.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func encode(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		b, _ = json.Marshal(response{JSONRPC: "2.0", ID: nullID, Error: &rpcError{CodeInternal, "Internal error"}})
	}
	return b
}

// message is one incoming JSON-RPC message: a request, a notification or a response.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// handle answers one message; ok is false when nothing is owed (a notification or a response).
func (s *Server) handle(ctx context.Context, userID string, raw json.RawMessage) (response, bool) {
	invalid := func(id json.RawMessage, why string) (response, bool) {
		return response{JSONRPC: "2.0", ID: id, Error: &rpcError{CodeInvalidRequest, "Invalid Request: " + why}}, true
	}
	var m message
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return invalid(nullID, "a message must be a JSON object")
	}
	id := nullID
	hasID := len(m.ID) > 0
	if hasID {
		switch m.ID[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			id = m.ID
		default:
			return invalid(nullID, "id must be a string or a number")
		}
	}
	if m.JSONRPC != "2.0" {
		return invalid(id, `jsonrpc must be "2.0"`)
	}
	if m.Method == nil {
		if hasID && (m.Result != nil || m.Error != nil) {
			return response{}, false // a client's response to a server request: nothing to answer
		}
		return invalid(id, "method is missing")
	}
	if !hasID {
		return response{}, false // a notification, notifications/initialized included
	}
	if len(m.Params) > 0 && m.Params[0] != '{' && string(m.Params) != "null" {
		return response{JSONRPC: "2.0", ID: id, Error: &rpcError{CodeInvalidParams, "Invalid arguments: params must be an object"}}, true
	}
	result, err := s.call(ctx, userID, *m.Method, m.Params)
	if err != nil {
		return response{JSONRPC: "2.0", ID: id, Error: err}, true
	}
	return response{JSONRPC: "2.0", ID: id, Result: result}, true
}

// call runs one method.
func (s *Server) call(ctx context.Context, userID, method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "initialize":
		return map[string]any{
			"protocolVersion": ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]string{"name": ServerName, "version": ServerVersion, "title": ServerTitle},
			"instructions": "SitePulse audits the pages of your sites with Lighthouse after every publish. " +
				"Start with list_sites, then use the site's id with the other tools; scan ids come from get_latest_scan or get_trend.",
		}, nil
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		return s.list, nil
	case "tools/call":
		return s.callTool(ctx, userID, params)
	}
	return nil, &rpcError{CodeMethodNotFound, "Unknown method: " + method}
}
