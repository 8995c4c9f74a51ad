package storetest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// skipNotice is what a run without DATABASE_URL says once: half of every contract test is
// the Postgres store, and a quiet pass would hide that it did not run.
const skipNotice = "sitepulse: DATABASE_URL not set, so the Postgres half of the tests was skipped (memory store only); " +
	"run them with DATABASE_URL=postgres://USER@HOST:5432/DB?sslmode=disable go test ./... (each test makes and drops its own schema)\n"

// Main is the TestMain of every package whose tests run against both stores: it runs the
// tests and, without DATABASE_URL, says the Postgres half was skipped.
//
// go test shows nothing but "ok" for a package that passes, whatever its tests print, so the
// notice goes to the terminal (/dev/tty) when the go command's own stdout is one, and to stderr
// (seen with -v or on failure) otherwise: `go test ./... > out.txt` or a CI log does not get it
// on the terminal. The packages of one go test run share their parent process, the go command,
// so a marker file named after it lets only the first package print.
func Main(m *testing.M) {
	code := m.Run()
	if os.Getenv("DATABASE_URL") == "" && firstOfRun() {
		notify(skipNotice)
	}
	os.Exit(code)
}

// firstOfRun answers true once per go command process.
func firstOfRun() bool {
	marker := filepath.Join(os.TempDir(), "sitepulse-postgres-skipped-"+strconv.Itoa(os.Getppid()))
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return os.IsNotExist(err) // an unwritable temp dir: say it rather than stay quiet
	}
	f.Close()
	return true
}

func notify(msg string) {
	var w io.Writer = os.Stderr
	if isTerminal(goStdout()) {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			w = tty
		}
	}
	fmt.Fprint(w, msg)
}

// goStdout is what the go command's stdout is open on ("/dev/pts/3", "pipe:[...]", a file),
// read from /proc; "" where there is no /proc.
func goStdout() string {
	link, err := os.Readlink("/proc/" + strconv.Itoa(os.Getppid()) + "/fd/1")
	if err != nil {
		return ""
	}
	return link
}

// isTerminal answers whether a file descriptor's target is a terminal device.
func isTerminal(target string) bool {
	return strings.HasPrefix(target, "/dev/pts/") || strings.HasPrefix(target, "/dev/tty")
}
