package store

import (
	"context"
	"strings"
)

// OAuth scopes (DESIGN §12). mcp:read lets a client read; mcp:write lets it publish (a
// shareable report, later a scan). Each MCP tool names the one it needs.
const (
	ScopeRead  = "mcp:read"
	ScopeWrite = "mcp:write"
	// ScopeAll is every scope: what tokens and API keys issued before the split may do.
	ScopeAll = ScopeRead + " " + ScopeWrite
)

// Scopes lists the supported scopes in their canonical order.
var Scopes = []string{ScopeRead, ScopeWrite}

// KnownScopes keeps the supported scopes of a space-separated scope string, in canonical
// order, and drops the rest ("offline_access", "openid"): a client asking for more than the
// server knows gets what it supports, and the grant says so (RFC 6749 §3.3).
func KnownScopes(scope string) string {
	fields := strings.Fields(scope)
	var out []string
	for _, s := range Scopes {
		for _, f := range fields {
			if f == s {
				out = append(out, s)
				break
			}
		}
	}
	return strings.Join(out, " ")
}

// HasScope answers whether a granted scope string includes want.
func HasScope(granted, want string) bool {
	for f := range strings.FieldsSeq(granted) { // a sequence: no slice per call
		if f == want {
			return true
		}
	}
	return false
}

// WithScope returns a context carrying the scope the request's credential grants: the OAuth
// token's, or the API key's.
func WithScope(ctx context.Context, scope string) context.Context {
	c := credentialFrom(ctx)
	c.scope = scope
	return withCredential(ctx, c)
}

// ScopeFrom returns the scope the request's credential grants, or "" (nothing) when the
// context carries none.
func ScopeFrom(ctx context.Context) string {
	return credentialFrom(ctx).scope
}
