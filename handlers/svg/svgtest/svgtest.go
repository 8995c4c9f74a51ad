// Package svgtest holds what the tests of the SVGs (handlers/svg) and of the pages and images
// that serve them (handlers) check alike: that an SVG is well-formed XML.
package svgtest

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// WellFormed parses an SVG with encoding/xml, strictly, and answers its elements by name; it
// fails the test when the SVG is not well-formed.
func WellFormed(t testing.TB, svg string) map[string]int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	count := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%.500s", err, svg)
		}
		if s, ok := tok.(xml.StartElement); ok {
			count[s.Name.Local]++
		}
	}
	return count
}
