package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"sitepulse/store"
)

// The tasks extension of 2026-07-28 (io.modelcontextprotocol/tasks, SEP-2663): a client that
// declares it in a request's clientCapabilities gets start_scan's scan as a task instead of a
// result, and follows it with tasks/get and tasks/cancel. The task is the scan row: its id is
// the scan's id, so it is durable, outlives the process that created it and is found by any
// replica on the same database. Nothing about a task is kept in memory.

const extTasks = "io.modelcontextprotocol/tasks"

// taskPollMs is the pollIntervalMs a task suggests: a page audit takes seconds.
const taskPollMs = 2000

// cancelReason is the reason a scan cancelled through tasks/cancel fails with; tasks/get tells a
// cancelled scan from a failed one by it.
const cancelReason = "Cancelled through MCP (tasks/cancel)"

// declares answers whether a modern request's clientCapabilities name the extension.
func declares(caps json.RawMessage, ext string) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(caps, &c) != nil {
		return false
	}
	_, ok := c.Extensions[ext]
	return ok
}

// task is a Task of the extension, with the fields of its status inlined (DetailedTask).
type task struct {
	ResultType     string         `json:"resultType"`
	TaskID         string         `json:"taskId"`
	Status         string         `json:"status"`
	StatusMessage  string         `json:"statusMessage,omitempty"`
	CreatedAt      string         `json:"createdAt"`
	LastUpdatedAt  string         `json:"lastUpdatedAt"`
	TTLMs          *int           `json:"ttlMs"` // null: the scan row is kept as long as the site
	PollIntervalMs int            `json:"pollIntervalMs,omitempty"`
	Result         any            `json:"result,omitempty"`
	Error          *rpcError      `json:"error,omitempty"`
	Meta           map[string]any `json:"_meta"`
}

// taskOf is the task a scan is. A complete scan's result is exactly what get_latest_scan returns
// for it (the tool result a 2026-07-28 client gets); a failed scan's error carries its reason.
func (s *Server) taskOf(ctx context.Context, userID string, sc store.Scan) (task, error) {
	updated := sc.CreatedAt
	if sc.StartedAt != nil {
		updated = *sc.StartedAt
	}
	if sc.CompletedAt != nil {
		updated = *sc.CompletedAt
	}
	t := task{ResultType: "complete", TaskID: sc.ID, CreatedAt: sc.CreatedAt.UTC().Format(time.RFC3339),
		LastUpdatedAt: updated.UTC().Format(time.RFC3339), Meta: serverMeta}
	switch {
	case sc.InFlight():
		t.Status, t.PollIntervalMs = "working", taskPollMs
		t.StatusMessage = "Scan " + string(sc.Status) + ": " + strconv.Itoa(sc.PagesDone) + " of " + strconv.Itoa(sc.PagesTotal) + " page audits done"
	case sc.Status == store.StatusFailed && sc.Error == cancelReason:
		t.Status, t.StatusMessage = "cancelled", cancelReason
	case sc.Status == store.StatusFailed:
		t.Status, t.StatusMessage = "failed", "Scan failed: "+sc.Error
		t.Error = &rpcError{Code: CodeInternal, Message: "Scan failed: " + sc.Error, Data: map[string]string{"reason": sc.Error}}
	default:
		in, err := s.sites.BudgetInputs(ctx, userID, sc.SiteID)
		if err != nil {
			return task{}, err
		}
		r, rerr := s.result(ctx, userID, eraModern, toolIndex["get_latest_scan"], latestScanOf(in, sc))
		if rerr != nil {
			return task{}, rerr
		}
		r.ResultType, r.Meta = "complete", withServerMeta(r.Meta)
		t.Status, t.StatusMessage, t.Result = "completed", "Scan complete: "+strconv.Itoa(sc.PagesTotal)+" page audits", r
	}
	return t, nil
}

// taskCall answers tasks/get, tasks/update and tasks/cancel of the user: an unknown task (not a
// scan of the user's) is -32602, as a bad argument. A scan never waits for input, so tasks/update
// of a task is the empty acknowledgement the extension asks for, whatever its inputResponses.
func (s *Server) taskCall(ctx context.Context, userID, method string, params json.RawMessage) (any, *rpcError) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return nil, &rpcError{Code: CodeInvalidParams, Message: "Invalid params: taskId (a string) is required"}
	}
	scope := store.ScopeRead
	if method == "tasks/cancel" {
		scope = store.ScopeWrite
	}
	if !store.HasScope(store.ScopeFrom(ctx), scope) {
		return nil, &rpcError{Code: CodeInsufficientScope, Message: "Forbidden: " + method + " needs the " + scope + " scope, which this credential lacks; " +
			"authorize again asking for it, or use an API key that may publish reports"}
	}
	sc, err := s.scan(ctx, userID, store.CanonicalID(p.TaskID))
	if err == nil { // the role of the scan's workspace: members follow a task, editors cancel it
		action := store.ActRead
		if method == "tasks/cancel" {
			action = store.ActScan
		}
		switch _, aerr := s.authorizeSite(ctx, userID, sc.SiteID, action); {
		case errors.Is(aerr, store.ErrNotFound):
			err = errScanNotFound
		case errors.Is(aerr, store.ErrForbidden):
			return nil, &rpcError{Code: CodeInsufficientScope, Message: "Forbidden: " + forbidden(action)}
		case aerr != nil:
			err = aerr
		}
	}
	if errors.Is(err, errScanNotFound) {
		return nil, &rpcError{Code: CodeInvalidParams, Message: "Invalid params: unknown task " + quote(p.TaskID)}
	}
	if err == nil && method == "tasks/update" {
		return complete(map[string]any{}), nil
	}
	if err == nil && method == "tasks/cancel" {
		if err = s.cancelScan(ctx, userID, sc.ID); err == nil {
			return complete(map[string]any{}), nil
		}
	}
	var t task
	if err == nil {
		t, err = s.taskOf(ctx, userID, sc)
	}
	if store.Classify(err) == store.ErrUnavailable || err == error(errUnavailable) {
		return nil, errUnavailable
	}
	if err != nil {
		s.log.Error("mcp "+method, "err", err)
		return nil, &rpcError{Code: CodeInternal, Message: "Internal error"}
	}
	return t, nil
}

// startTask turns start_scan's result into the task of its scan, for a client that declared the
// extension; a tool error stays a tool result.
func (s *Server) startTask(ctx context.Context, userID string, r toolResult) (any, *rpcError) {
	if r.IsError {
		return r, nil
	}
	var st scanState
	err := json.Unmarshal(r.StructuredContent, &st)
	var t task
	if err == nil {
		var sc store.Scan
		if sc, err = s.scans.Scan(ctx, userID, st.ScanID); err == nil {
			t, err = s.taskOf(ctx, userID, sc)
		}
	}
	if store.Classify(err) == store.ErrUnavailable || err == error(errUnavailable) {
		return nil, errUnavailable
	}
	if err != nil {
		s.log.Error("mcp start_scan task", "err", err)
		return nil, &rpcError{Code: CodeInternal, Message: "Internal error"}
	}
	t.ResultType = "task"
	return t, nil
}
