package securitylog

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

// Hostile values survive both formats exactly: a spreadsheet formula is written guarded and read
// back as it was, and so is a value that starts with the guard's own quote.
func TestExportsReadBackWhatTheyWrote(t *testing.T) {
	at := time.Date(2026, 12, 6, 5, 0, 0, 123456000, time.UTC)
	events := []store.LogEvent{
		{Seq: 3, WorkspaceID: "w", ActorID: "u", ActorEmail: "a@example.com", Kind: store.LogSignIn, Details: map[string]string{}, IP: "::1", UserAgent: "curl/8", At: at},
		{Seq: 2, WorkspaceID: "w", Kind: store.LogSiteChanged, Target: `=HYPERLINK("http://evil.test","x")`, Details: map[string]string{"name": "+1", "q": `"quoted", comma`}, At: at},
		{Seq: 1, WorkspaceID: "w", Kind: store.LogSiteChanged, Target: "'already quoted", Details: map[string]string{"at": "@SUM(A1)", "minus": "-2", "tab": "\tx", "nl": "two\nlines", "u": "é 漢 🚀"}, At: at},
	}
	for _, format := range []string{"csv", "jsonl"} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, format)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if format == "csv" && (strings.Contains(buf.String(), ",=HYPERLINK") || strings.Contains(buf.String(), "\n=")) {
			t.Errorf("a formula cell went out unguarded:\n%s", buf.String())
		}
		read := ReadCSV
		if format == "jsonl" {
			read = ReadJSONL
		}
		got, err := read(&buf)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if !reflect.DeepEqual(got, events) {
			t.Errorf("%s read back:\n got %+v\nwant %+v", format, got, events)
		}
	}
	if _, err := NewWriter(&bytes.Buffer{}, "xml"); err == nil {
		t.Error("an unknown format was accepted")
	}
}
