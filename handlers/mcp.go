package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/store"
)

// The MCP endpoint's HTTP side (an OAuth protected resource): origin
// check, bearer authentication, body cap and the transport's statuses. The protocol and the tools
// are package mcp's.

// handleMCP answers POST /api/mcp for an authenticated user.
func (s *server) handleMCP(m *mcp.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readRequestBody(r)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				writeRPCError(w, http.StatusRequestEntityTooLarge, mcp.CodeInvalidRequest, "Invalid Request: the body is larger than 1 MiB")
				return
			}
			writeRPCError(w, http.StatusBadRequest, mcp.CodeParseError, "Parse error: the body could not be read")
			return
		}
		// The protocol version (MCP-Protocol-Version, and from 2026-07-28 Mcp-Method and
		// Mcp-Name) is package mcp's to judge: it travels with the body.
		status, out := m.ServeRequest(r.Context(), mcp.Request{UserID: store.UserIDFrom(r.Context()), Header: r.Header, Body: body})
		h := w.Header()
		h["Cache-Control"] = noStoreValue
		if out == nil {
			w.WriteHeader(status)
			return
		}
		h["Content-Type"] = jsonContentType
		switch status {
		case http.StatusServiceUnavailable:
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		case http.StatusForbidden:
			s.insufficientScope(w)
		}
		w.WriteHeader(status)
		w.Write(out)
	})
}

// handleMCPMethodNotAllowed answers GET and DELETE: this stateless server offers no SSE stream
// and no session to end.
func (s *server) handleMCPMethodNotAllowed() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		writeRPCError(w, http.StatusMethodNotAllowed, mcp.CodeInvalidRequest, "Method not allowed: this stateless server answers POST only")
	})
}

func writeRPCError(w http.ResponseWriter, status, code int, message string) {
	oauth.WriteJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
}

// sameOrigin refuses a request whose Origin header is present and is not BASE_URL's origin
// (MCP 2025-03-26 transport: servers must validate Origin, against DNS rebinding).
func (s *server) sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || !strings.EqualFold(u.Scheme, s.base.Scheme) || !strings.EqualFold(u.Host, s.base.Host) {
				writeRPCError(w, http.StatusForbidden, mcp.CodeInvalidRequest, "Forbidden: Origin "+origin+" is not allowed")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
