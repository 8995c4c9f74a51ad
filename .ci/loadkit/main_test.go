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
