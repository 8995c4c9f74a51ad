package store_test

import (
	"context"
	"testing"

	"sitepulse/store"
)

// The user id, principal and scope a context carries read as if each had a value of its own:
// the nearest setting of each wins, whatever was set around it, and WithPrincipalScope is
// WithScope over WithPrincipal.
func TestCredentialPartsReadAsTheirOwn(t *testing.T) {
	bg := context.Background()
	key := store.Principal{UserID: "u1", KeyWorkspaceID: "w1", KeyPublish: true}
	type got struct {
		user  string
		p     store.Principal
		scope string
	}
	read := func(ctx context.Context) got {
		return got{store.UserIDFrom(ctx), store.PrincipalFrom(ctx), store.ScopeFrom(ctx)}
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		want got
	}{
		{"nothing", bg, got{}},
		{"a user id alone is that user's principal", store.WithUserID(bg, "u2"), got{"u2", store.Principal{UserID: "u2"}, ""}},
		{"a scope alone", store.WithScope(bg, "mcp:read"), got{"", store.Principal{}, "mcp:read"}},
		{"a principal sets the user id", store.WithPrincipal(store.WithUserID(bg, "u2"), key), got{"u1", key, ""}},
		{"a user id over a principal keeps the principal", store.WithUserID(store.WithPrincipal(bg, key), "u3"), got{"u3", key, ""}},
		{"a scope over a principal", store.WithScope(store.WithPrincipal(bg, key), "mcp:write"), got{"u1", key, "mcp:write"}},
		{"a principal over a scope keeps the scope", store.WithPrincipal(store.WithScope(bg, "mcp:read"), key), got{"u1", key, "mcp:read"}},
		{"the nearest scope", store.WithScope(store.WithScope(bg, "a"), "b"), got{"", store.Principal{}, "b"}},
		{"WithPrincipalScope", store.WithPrincipalScope(store.WithScope(store.WithUserID(bg, "u2"), "x"), key, "mcp:read"), got{"u1", key, "mcp:read"}},
	} {
		if g := read(c.ctx); g != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, g, c.want)
		}
	}
	// A context made from another is unchanged by what is set on the new one.
	parent := store.WithPrincipal(bg, key)
	_ = store.WithPrincipalScope(parent, store.Principal{UserID: "u9"}, "all")
	if g := read(parent); g != (got{"u1", key, ""}) {
		t.Errorf("the parent changed: %+v", g)
	}
}
