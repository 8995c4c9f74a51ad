package store

import (
	"errors"
	"testing"
)

// Authorize is the one authorization question: every role against every action, and API keys
// inside and outside their workspace.
func TestAuthorize(t *testing.T) {
	const ws, other = "w", "x"
	user := Principal{UserID: "u"}
	key := Principal{UserID: "u", KeyWorkspaceID: ws}
	publishingKey := Principal{UserID: "u", KeyWorkspaceID: ws, KeyPublish: true}
	tests := []struct {
		name string
		p    Principal
		role Role
		wsID string
		a    Action
		want error
	}{
		{"an owner manages", user, RoleOwner, ws, ActManage, nil},
		{"an editor edits", user, RoleEditor, ws, ActEdit, nil},
		{"an editor does not manage", user, RoleEditor, ws, ActManage, ErrForbidden},
		{"a viewer reads", user, RoleViewer, ws, ActRead, nil},
		{"a viewer does not edit", user, RoleViewer, ws, ActEdit, ErrForbidden},
		{"a viewer does not publish reports", user, RoleViewer, ws, ActReport, ErrForbidden},
		{"a viewer may leave", user, RoleViewer, ws, ActLeave, nil},
		{"a stranger gets not found, not forbidden", user, "", ws, ActRead, ErrNotFound},
		{"a key reads its workspace", key, RoleOwner, ws, ActRead, nil},
		{"a key made by an owner still does not edit", key, RoleOwner, ws, ActEdit, ErrForbidden},
		{"a key without publishing makes no report", key, RoleEditor, ws, ActReport, ErrForbidden},
		{"a publishing key makes reports", publishingKey, RoleEditor, ws, ActReport, nil},
		{"a publishing key of a viewer makes none", publishingKey, RoleViewer, ws, ActReport, ErrForbidden},
		{"a writing key starts scans", publishingKey, RoleEditor, ws, ActScan, nil},
		{"a read-only key starts none", key, RoleOwner, ws, ActScan, ErrForbidden},
		{"a writing key of a viewer starts none", publishingKey, RoleViewer, ws, ActScan, ErrForbidden},
		{"a writing key still does not edit sites", publishingKey, RoleOwner, ws, ActEdit, ErrForbidden},
		{"a viewer starts no scan", user, RoleViewer, ws, ActScan, ErrForbidden},
		{"a key outside its workspace gets not found", key, RoleOwner, other, ActRead, ErrNotFound},
		{"no principal gets not found", Principal{}, RoleOwner, ws, ActRead, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Authorize(tt.p, Workspace{ID: tt.wsID, Role: tt.role}, tt.a)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}
