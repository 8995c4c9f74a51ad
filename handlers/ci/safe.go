package ci

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What `sitepulse check` prints goes to a CI runner's log, and the Markdown it fetches to the
// job's step summary; both hold text the service sent (a site's name, page paths, reasons,
// errors, URLs). A compromised or spoofed service must not be able to drive the runner or the
// terminal with it, so that text is made inert on the way out: control characters (terminal
// escapes, the carriage return that rewrites a line, the 8-bit CSI, bidirectional overrides)
// are dropped, and the prefixes a runner reads as a command ("::" of GitHub's workflow
// commands, "##[" and "##vso[" of the older and Azure's logging commands) get a zero-width
// space inside, wherever they stand. The words themselves still show.

// commandPrefixes are what a runner reads as a command, each with its inert form.
var commandPrefixes = strings.NewReplacer("::", ":\u200b:", "##[", "#\u200b#[", "##vso[", "#\u200b#vso[")

// safeText is s with no control character but line breaks (lines true) and no command prefix;
// without lines, a line break is a space, so s stays on the line it is printed in.
func safeText(s string, lines bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\n' && lines:
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteByte(' ')
		case r == utf8.RuneError && n == 1: // a byte that is not UTF-8, such as the 8-bit CSI
			b.WriteRune(utf8.RuneError)
		case unicode.IsControl(r) || unicode.In(r, unicode.Bidi_Control):
		default:
			b.WriteRune(r)
		}
	}
	return commandPrefixes.Replace(b.String())
}

// safeLine is the service's text for one line of output.
func safeLine(s string) string { return safeText(s, false) }

// safeWriter writes what the check prints with safeText: everything goes through it, so text of
// the service's that reaches a line by any way is inert too.
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(s.w, safeText(string(b), true)); err != nil {
		return 0, err
	}
	return len(b), nil
}
