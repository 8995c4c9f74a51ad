package psi

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// errShutdown is the scanner's cancel cause when it stops (scanner/pool.go).
var errShutdown = errors.New("the scanner is shutting down")

// fixture reads a real PSI response from testdata/psi.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "psi", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
