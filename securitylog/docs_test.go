package securitylog

import (
	"os"
	"strings"
	"testing"

	"sitepulse/store"
)

// TestDocsListEveryKind keeps docs/audit-log.md's table true: every kind of store.LogKinds is a
// row, and the table names no other.
func TestDocsListEveryKind(t *testing.T) {
	doc, err := os.ReadFile("../docs/audit-log.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if k, ok := strings.CutPrefix(line, "| `"); ok {
			k, _, _ = strings.Cut(k, "`")
			rows[k] = true
		}
	}
	for _, k := range store.LogKinds {
		if !rows[k.Kind] {
			t.Errorf("docs/audit-log.md does not list %s", k.Kind)
		}
		delete(rows, k.Kind)
	}
	for k := range rows {
		t.Errorf("docs/audit-log.md lists %s, which is no kind", k)
	}
}
