package storetest

import "testing"

// TestFirstOfRunOnce: the skip notice is said by one package of a go test run, not by each.
func TestFirstOfRunOnce(t *testing.T) {
	firstOfRun() // another package of this run may have been first
	if firstOfRun() {
		t.Error("firstOfRun answered true twice for one go command")
	}
}

// TestNoticeGoesToTheTerminalOnlyWhenGoTestPrintsToOne: the skip notice is written to /dev/tty
// only when the go command's own stdout is a terminal; `go test ./... > out.txt` or a pipe in
// CI keeps it out of the terminal (issue 24).
func TestNoticeGoesToTheTerminalOnlyWhenGoTestPrintsToOne(t *testing.T) {
	for _, tt := range []struct {
		goStdout string
		want     bool
	}{
		{"/dev/pts/3", true},
		{"/dev/tty1", true},
		{"/dev/ttys004", true},
		{"pipe:[123456]", false},
		{"/home/me/out.txt", false},
		{"/dev/null", false},
		{"socket:[99]", false},
		{"", false}, // unknown (no /proc): stderr
	} {
		if got := isTerminal(tt.goStdout); got != tt.want {
			t.Errorf("isTerminal(%q) = %v, want %v", tt.goStdout, got, tt.want)
		}
	}
}
