package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpListsCommands: `loadkit -h` (and no arguments) lists the commands with their flags,
// rather than failing with `unknown command "-h"` (issue 24).
func TestHelpListsCommands(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {}} {
		var out bytes.Buffer
		err := run(args, &out)
		if len(args) == 0 && err == nil {
			t.Errorf("no command: want an error after the usage")
		}
		if len(args) > 0 && err != nil {
			t.Errorf("%q: %v", args, err)
		}
		for _, want := range []string{"seed", "bodies", "psi", "count", "platform", "-addr", "-delay", "DATABASE_URL"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%q: usage lacks %q:\n%s", args, want, out.String())
			}
		}
	}
}

// TestPSIDoubleWithoutFixturesSaysWhere: the PSI double started where it finds no fixtures (from
// outside the repository) refuses to start, naming the directory it looked in and how to fix it,
// instead of answering every audit with a 404 (issue 37).
func TestPSIDoubleWithoutFixturesSaysWhere(t *testing.T) {
	dir := t.TempDir()
	err := run([]string{"psi", "-addr", "127.0.0.1:0", "-fixtures", dir}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("the PSI double started without fixtures")
	}
	for _, want := range []string{dir, "no PSI fixtures", "-fixtures", "testdata/psi", "repository's root"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n, err := psiFixtures("../../testdata/psi"); err != nil || n < 10 {
		t.Errorf("the repository's fixtures: %d, %v", n, err)
	}
}
