package handlers

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAll: readAll reads what io.ReadAll reads, whatever size the request declared (exact,
// short, long, unknown, absurd) and however the body arrives, and passes a read's error on.
func TestReadAll(t *testing.T) {
	bodies := []string{"", "{}", `{"siteId":"db70cd1b-6212-4f26-9739-cf3fa057352c"}`, strings.Repeat("x", 5000), strings.Repeat("y", 70<<10)}
	for _, body := range bodies {
		n := int64(len(body))
		for _, declared := range []int64{n, n - 1, n + 1, 0, -1, 1 << 40} {
			for name, r := range map[string]io.Reader{"whole": strings.NewReader(body), "a byte at a time": iotest.OneByteReader(strings.NewReader(body)),
				"data with EOF": iotest.DataErrReader(strings.NewReader(body))} {
				got, err := readAll(r, declared)
				if err != nil || !bytes.Equal(got, []byte(body)) {
					t.Errorf("%d bytes, declared %d, %s: %d bytes, %v", n, declared, name, len(got), err)
				}
			}
		}
	}
	broken := errors.New("connection reset")
	if _, err := readAll(io.MultiReader(strings.NewReader("{"), iotest.ErrReader(broken)), 10); !errors.Is(err, broken) {
		t.Errorf("a failing body: %v", err)
	}
}
