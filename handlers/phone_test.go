package handlers

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestPhoneTablesHideNothing is issue 24's phone check on the templates: no column is hidden on a
// small screen (hide-sm), and every table whose rows stack on a phone (class "stack") labels each
// cell that is not an action, since the stacked rows have no header. The screenshots at 375 px
// in the issue notes show the result.
func TestPhoneTablesHideNothing(t *testing.T) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile(`(?s)<table[^>]*>.*?</table>`)
	cell := regexp.MustCompile(`(?s)<td[^>]*>.*?</td>`)
	stacked := 0
	for _, name := range names {
		b, _ := fs.ReadFile(templateFS, name)
		src := string(b)
		if strings.Contains(src, "hide-sm") {
			t.Errorf("%s hides a column on phones (hide-sm)", name)
		}
		for _, tb := range table.FindAllString(src, -1) {
			if !strings.Contains(tb[:strings.Index(tb, ">")], "stack") {
				continue
			}
			stacked++
			for _, td := range cell.FindAllString(tb, -1) {
				if !strings.Contains(td[:strings.Index(td, ">")], "data-label=") && !strings.Contains(td, "<form") {
					t.Errorf("%s: a stacked table's cell has no data-label: %.120s", name, td)
				}
			}
		}
	}
	// API keys, connected apps, reports, regressions, scan history, third-party scripts.
	if stacked < 6 {
		t.Errorf("%d tables stack on a phone, want at least 6", stacked)
	}
}
