package lighthouse

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// golden compares got, as indented JSON, with testdata/golden/<name>; -update rewrites it.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("..", "..", "testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./scanner/lighthouse -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s differs from the golden file; diff with -update and git diff:\n%s", name, firstDiff(b, want))
	}
}

func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(g) && i < len(w); i++ {
		if !bytes.Equal(g[i], w[i]) {
			return "line " + itoa(i+1) + ":\n got: " + string(g[i]) + "\nwant: " + string(w[i])
		}
	}
	return "lengths differ"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// fixture reads a real PSI response from testdata/psi.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "psi", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureNames lists every real PSI response, Lighthouse 12's included, as names for fixture.
func fixtureNames() []string {
	files, _ := filepath.Glob("../../testdata/psi/*.json")
	lh12, _ := filepath.Glob("../../testdata/psi/lh12/*.json")
	var names []string
	for _, f := range append(files, lh12...) {
		name, _ := filepath.Rel("../../testdata/psi", f)
		names = append(names, name)
	}
	return names
}
