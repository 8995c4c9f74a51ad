// Package mcp is SitePulse's MCP server: JSON-RPC 2.0 over stateless Streamable HTTP, dual-era
// (versions.go): the legacy protocol versions 2025-03-26, 2025-06-18 and 2025-11-25 (initialize,
// then each request judged by its MCP-Protocol-Version header) and the modern 2026-07-28 (no
// handshake, every request self-describing). One table of tools over the authenticated user's own
// data serves every version: read-only ones, one that creates a shareable client report and one
// that starts a scan (a task of the tasks extension, tasks.go); four ui:// views draw results in
// hosts that render MCP Apps (views.go). The versions differ only in envelopes. It knows nothing of HTTP authentication: the handlers package
// verifies the bearer credential and hands ServeRequest the user's id, the headers and the body.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"sitepulse/store"
)

// Server identity (interface "Versioning"). The protocol versions spoken are in versions.go.
const (
	ServerName    = "sitepulse"
	ServerVersion = "0.1.0"
	ServerTitle   = "SitePulse performance data"
)

// The store as the tools read and write it, in three parts (main gives each the one store);
// every method is scoped to the workspaces the user belongs to.

// SiteReader is what the tools read of sites: list_sites, get_site and get_budget_status, and
// the site a request names (authorizeSite).
type SiteReader interface {
	// SiteListingsPage gives list_sites a page at a time (a workspace may have 2,000 sites).
	SiteListingsPage(ctx context.Context, userID string, q store.ListingQuery) (store.ListingPage, error)
	Site(ctx context.Context, userID, siteID string) (store.Site, error)
	SiteAndWorkspace(ctx context.Context, userID, siteID string) (store.Site, store.Workspace, error)
	BudgetInputs(ctx context.Context, userID, siteID string) (store.BudgetInputs, error)
	CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error)
	// Publishes are the trend view's marks, as on the site page's chart.
	Publishes(ctx context.Context, userID, siteID string, since time.Time, limit int) ([]store.Publish, error)
}

// ScanReader is what the tools read of scans and their pages: get_scan, get_page_details,
// get_regression_report, compare_scans and the views.
type ScanReader interface {
	Scan(ctx context.Context, userID, scanID string) (store.Scan, error)
	ScanView(ctx context.Context, userID, scanID string) (store.ScanView, error)
	PageResults(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	PageErrors(ctx context.Context, userID, scanID string) ([]store.PageError, error)
	PageDetails(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) (store.PageDetails, error)
	LatestResults(ctx context.Context, userID, siteID, knownScanID string) (store.LatestResults, error)
	LatestTwo(ctx context.Context, userID, siteID string, known []string) (store.LatestTwo, error)
	// What changed between two scans (issue 33): get_regression_report's causes and compare_scans.
	ComparePairs(ctx context.Context, userID, fromScanID, toScanID string) (store.ScanPairs, error)
	RunImages(ctx context.Context, userID string, runs []store.Run, maxBytes int) ([][]store.PageImage, error)
}

// ScanWriter is what the tools write: start_scan's "Scan now" (store.StartScan), cancelling an
// unfinished scan (the tasks extension) and create_report.
type ScanWriter interface {
	store.ScanStarter
	ExpireScan(ctx context.Context, scanID, reason string, now time.Time) error
	CreateScanReport(ctx context.Context, p store.Principal, r store.Report, max int) (store.ScanReport, error)
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
	sites    SiteReader
	scans    ScanReader
	writes   ScanWriter
	baseURL  string
	now      func() time.Time
	log      *slog.Logger
	lists    [eraCount]json.RawMessage // the tools/list result of each era, encoded once
	metrics  *metricsCache
	analyses *analysisCache // latestAnalysis
	quota    Quota
	links    LinkSealer
	auditLog Recorder // nil: none
	homes    homes    // authorize
	latest   latestAnswers
	field    store.FieldReads
}

// Config is what a Server needs. Now and Log default to time.Now and a discarding logger.
type Config struct {
	Sites   SiteReader
	Scans   ScanReader
	Writes  ScanWriter
	BaseURL string // {base_url}, no trailing slash: report links start with it
	Now     func() time.Time
	Log     *slog.Logger
	// Quota is the accounts' daily audit budget start_scan checks; nil grants every scan.
	Quota Quota
	// Links seals a new client report's token so the Reports list can show its link again
	// (platform.Keys); nil keeps reports hashed only.
	Links LinkSealer
	// Field is what get_field_data reads (tools_field.go); nil: every site has no field data.
	Field store.FieldReads
	// AuditLog records the security events tools cause (a report link made) in the workspace's
	// security log (securitylog.Recorder); nil records none.
	AuditLog Recorder
}

// Recorder appends an event to a workspace's security log (securitylog.Recorder).
type Recorder interface {
	Record(ctx context.Context, e store.LogEvent)
}

// LinkSealer seals a client report's token bound to the report's id (platform.Keys).
type LinkSealer interface {
	SealReportLink(token, reportID string) (string, error)
}

// New returns a Server.
func New(c Config) *Server {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{sites: c.Sites, scans: c.Scans, writes: c.Writes, baseURL: c.BaseURL, now: c.Now, log: c.Log, metrics: newMetricsCache(64), analyses: &analysisCache{max: 256}, quota: c.Quota, links: c.Links, auditLog: c.AuditLog, field: c.Field}
	for e := range era(eraCount) {
		result := map[string]any{"tools": toolList(e)}
		if e == eraModern {
			result = complete(cacheable(result))
		}
		b, err := json.Marshal(result)
		if err != nil {
			panic(err) // the tool table is a constant; it always encodes
		}
		s.lists[e] = b
	}
	return s
}

// JSON-RPC 2.0 error codes, and the MCP codes of 2026-07-28.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	// CodeInsufficientScope answers a call the credential's scope (store.ScopeFrom) does not
	// allow; it travels with HTTP 403, which handlers turns into an insufficient_scope
	// challenge. -32003 is in JSON-RPC's range for server-defined errors.
	CodeInsufficientScope = -32003

	CodeHeaderMismatch = -32020
	// CodeMissingClientCapability answers a request that needs a capability (here the tasks
	// extension) its _meta does not declare; HTTP 400, data.requiredCapabilities names it.
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
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

func errorResponse(id json.RawMessage, code int, message string) response {
	return response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: message}}
}

// errUnavailable answers a tool call that failed because the database cannot be reached (a
// restart, a failover). A lone request carrying it is HTTP 503, as every other surface answers
// then, so clients retry instead of reading it as a bug.
var errUnavailable = &rpcError{Code: CodeInternal, Message: "Internal error: the database is unavailable; retry shortly"}

// Request is one POST to the MCP endpoint: the caller, the transport headers (MCP-Protocol-Version;
// from 2026-07-28 also Mcp-Method and Mcp-Name) and the body.
type Request struct {
	UserID string
	Header http.Header
	Body   []byte
}

// Serve answers a body sent without MCP headers, as a 2025-03-26 client sends it.
func (s *Server) Serve(ctx context.Context, userID string, body []byte) (int, []byte) {
	return s.ServeRequest(ctx, Request{UserID: userID, Body: body})
}

// ServeRequest answers one HTTP request: the HTTP status and the JSON body, nil for 202 Accepted
// (a body of notifications or responses only). A body that is not JSON is 400 with a -32700
// error. A request that carries 2026-07-28's per-request _meta (or its MCP-Protocol-Version) is
// served by the modern rules (serveModern); any other by the legacy era its header names, where a
// lone invalid request is 400 with -32600, a lone request that found the database unreachable is
// 503, a body with a call the context's scope does not allow is 403 with -32003 (in every era),
// and anything else is 200.
func (s *Server) ServeRequest(ctx context.Context, r Request) (int, []byte) {
	body := bytes.TrimSpace(r.Body)
	// A lone request in the shape clients write is decoded in one pass; any other body, and
	// every body that is wrong, takes the decoder's path and gets the same answers as ever.
	m, quick := parseQuick(body)
	if !quick && !json.Valid(body) {
		return 400, encode(errorResponse(nullID, CodeParseError, "Parse error: the body is not valid JSON"))
	}
	version := r.Header.Get("Mcp-Protocol-Version") // canonical: Get allocates to canonicalize any other spelling
	if body[0] != '[' && isModern(version, body) {
		return s.serveModern(ctx, r, body)
	}
	e, ok := legacyEra(version)
	if body[0] == '[' && version == ModernVersion {
		e, ok = eraModern, true
	}
	if !ok {
		return 400, encode(errorResponse(nullID, CodeInvalidRequest, "Invalid Request: unsupported MCP-Protocol-Version "+version+
			"; this server speaks "+strings.Join(SupportedVersions, ", ")))
	}
	if body[0] == '[' {
		return s.serveBatch(ctx, r.UserID, e, version, body)
	}
	var resp response
	if quick {
		m, id, owed, bad := judge(m)
		resp, ok = s.answer(ctx, r.UserID, e, m, id, owed, bad)
	} else {
		resp, ok = s.handle(ctx, r.UserID, e, body)
	}
	if !ok {
		return 202, nil
	}
	if resp.Error != nil && resp.Error.Code == CodeInvalidRequest {
		return 400, encode(resp)
	}
	if resp.Error != nil && resp.Error.Code == CodeInsufficientScope {
		return 403, encode(resp)
	}
	if resp.Error == errUnavailable {
		return 503, encode(resp)
	}
	return 200, encodeResponse(resp)
}

// serveBatch answers a JSON-RPC batch: a 2025-03-26 client may send one; 2025-06-18 removed them.
func (s *Server) serveBatch(ctx context.Context, userID string, e era, version string, body []byte) (int, []byte) {
	if e >= era20250618 {
		return 400, encode(errorResponse(nullID, CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not part of MCP "+version+"; send one request per POST"))
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(body, &batch); err != nil {
		return 400, encode(errorResponse(nullID, CodeParseError, "Parse error: "+err.Error()))
	}
	if len(batch) == 0 {
		return 400, encode(errorResponse(nullID, CodeInvalidRequest, "Invalid Request: empty batch"))
	}
	if len(batch) > MaxBatch {
		return 400, encode(errorResponse(nullID, CodeInvalidRequest,
			fmt.Sprintf("Invalid Request: a batch may carry at most %d calls; this one has %d", MaxBatch, len(batch))))
	}
	out := make([]response, 0, len(batch))
	status := 200
	for _, msg := range batch {
		if r, ok := s.handle(ctx, userID, e, msg); ok {
			out = append(out, r)
			if r.Error != nil && r.Error.Code == CodeInsufficientScope {
				status = 403 // the client steps up for the whole batch
			}
		}
	}
	if len(out) == 0 {
		return 202, nil
	}
	return status, encode(out)
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
		b, _ = json.Marshal(errorResponse(nullID, CodeInternal, "Internal error"))
	}
	return b
}

// encodeResponse is encode of a lone response, written around a kept result (keptResult)
// instead of encoding the result again: the same bytes, as the id is a JSON scalar as the
// request wrote it (parse), which encoding leaves as it is.
func encodeResponse(r response) []byte {
	k, ok := r.Result.(keptResult)
	if !ok || r.Error != nil {
		return encode(r)
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	b := make([]byte, 0, len(head)+len(r.ID)+len(mid)+len(k)+1)
	b = append(append(append(append(b, head...), r.ID...), mid...), k...)
	return append(b, '}')
}

// message is one incoming JSON-RPC message: a request, a notification or a response.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	// call is params as a tools/call reads them, when parseQuick decoded them with the rest.
	call *toolCall
}

// parse reads one message. owed is false when nothing is to be answered (a notification or a
// client's response); bad is the answer to a message that is not a valid request.
func parse(raw json.RawMessage) (m message, id json.RawMessage, owed bool, bad *response) {
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		r := errorResponse(nullID, CodeInvalidRequest, "Invalid Request: a message must be a JSON object")
		return m, nullID, true, &r
	}
	return judge(m)
}

// judge is parse's verdict on a decoded message.
func judge(m message) (_ message, id json.RawMessage, owed bool, bad *response) {
	invalid := func(id json.RawMessage, why string) (message, json.RawMessage, bool, *response) {
		r := errorResponse(id, CodeInvalidRequest, "Invalid Request: "+why)
		return m, id, true, &r
	}
	id = nullID
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
			return m, id, false, nil // a client's response to a server request: nothing to answer
		}
		return invalid(id, "method is missing")
	}
	return m, id, hasID, nil // without an id: a notification, notifications/initialized included
}

// handle answers one message of legacy era e; ok is false when nothing is owed.
func (s *Server) handle(ctx context.Context, userID string, e era, raw json.RawMessage) (response, bool) {
	m, id, owed, bad := parse(raw)
	return s.answer(ctx, userID, e, m, id, owed, bad)
}

// answer answers a message parse (or parseQuick and judge) read.
func (s *Server) answer(ctx context.Context, userID string, e era, m message, id json.RawMessage, owed bool, bad *response) (response, bool) {
	if bad != nil {
		return *bad, true
	}
	if !owed {
		return response{}, false
	}
	if len(m.Params) > 0 && m.Params[0] != '{' && string(m.Params) != "null" {
		return errorResponse(id, CodeInvalidParams, "Invalid arguments: params must be an object"), true
	}
	result, err := s.call(ctx, userID, e, *m.Method, m.Params, m.call)
	if err != nil {
		return response{JSONRPC: "2.0", ID: id, Error: err}, true
	}
	return response{JSONRPC: "2.0", ID: id, Result: result}, true
}

const instructions = "SitePulse audits the pages of your sites with Lighthouse after every publish. " +
	"Start with list_sites, then use the site's id with the other tools; scan ids come from get_latest_scan or get_trend."

// call runs one method of legacy era e.
func (s *Server) call(ctx context.Context, userID string, e era, method string, params json.RawMessage, pre *toolCall) (any, *rpcError) {
	switch method {
	case "initialize":
		version, caps := negotiate(params), map[string]any{"tools": map[string]any{}}
		if version != "2025-03-26" {
			caps = uiCapabilities(false)
		}
		return map[string]any{
			"protocolVersion": version,
			"capabilities":    caps,
			"serverInfo":      map[string]string{"name": ServerName, "version": ServerVersion, "title": ServerTitle},
			"instructions":    instructions,
		}, nil
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		return s.lists[e], nil
	case "tools/call":
		return s.callTool(ctx, userID, e, params, pre)
	case "resources/list":
		if e >= era20250618 {
			return resourceList(), nil
		}
	case "resources/read":
		if e >= era20250618 {
			return readResource(e, params)
		}
	}
	return nil, &rpcError{Code: CodeMethodNotFound, Message: "Unknown method: " + method}
}
