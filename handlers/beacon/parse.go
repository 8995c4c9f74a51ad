package beacon

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"sitepulse/store"
)

// MaxBody bounds a beacon's body: the script sends at most 10 figures of a few hundred bytes.
const MaxBody = 4 << 10

// MaxFigures bounds the figures of one beacon.
const MaxFigures = 10

// Beacon is one accepted beacon: a page view's figures, as the script sends them.
type Beacon struct {
	Path       string            // the page's path: no query, no fragment
	Device     store.FieldDevice // phone or desktop, worked out in the browser
	Navigation string            // a store.BeaconNavigations name
	Figures    []Figure
}

// Figure is one metric's value and attribution.
type Figure struct {
	Metric string  // a store.FieldMetrics name, or "nav" (a soft navigation, no value)
	Value  float64 // ms, or the CLS score
	// Target is the element's selector: LCP's element, INP's interaction target, CLS's largest
	// shift target.
	Target string
	// Resource is LCP's resource URL without its query or fragment.
	Resource string
	// EventType and the phases are INP's.
	EventType                                         string
	InputDelay, ProcessingDuration, PresentationDelay float64
}

// wire is the JSON the script sends (sitepulse.js), short keys to keep beacons small.
type wire struct {
	P  *string      `json:"p"`
	D  *string      `json:"d"`
	NT *string      `json:"nt"`
	M  []wireFigure `json:"m"`
}

type wireFigure struct {
	N *string  `json:"n"`
	V *float64 `json:"v"`
	T *string  `json:"t"`
	U *string  `json:"u"`
	E *string  `json:"e"`
	I *float64 `json:"i"`
	R *float64 `json:"r"`
	S *float64 `json:"s"`
}

// EventTypes are the INP event types a beacon may name: web-vitals' entry names and its
// interactionType fallback.
var EventTypes = []string{"click", "auxclick", "contextmenu", "dblclick", "pointerdown", "pointerup", "mousedown", "mouseup",
	"touchstart", "touchend", "keydown", "keyup", "keypress", "pointer", "keyboard"}

// ParseError says why a beacon was refused; its text is the API's error message. Malformed
// is true for a body that is not the script's JSON at all (400), false for one whose values
// are refused (422).
type ParseError struct {
	Reason    string
	Malformed bool
}

func (e *ParseError) Error() string { return e.Reason }

func refuse(reason string) error { return &ParseError{Reason: reason} }

// Parse reads a beacon strictly: one JSON object of known fields (no other, no duplicate key
// tricks beyond encoding/json's last-wins, nothing after it), a path (no query or fragment,
// no control characters, at most 300 bytes), a device class, a navigation type, 1 to
// MaxFigures figures of known metrics whose values lie in their plausible ranges
// (store.BeaconRange), selectors of printable text.
func Parse(body []byte) (Beacon, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Beacon{}, &ParseError{Reason: "the beacon is not the JSON object the script sends", Malformed: true}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Beacon{}, &ParseError{Reason: "the beacon has data after its object", Malformed: true}
	}
	if w.P == nil || w.D == nil || w.NT == nil || len(w.M) == 0 {
		return Beacon{}, refuse("the beacon needs p, d, nt and m")
	}
	b := Beacon{Path: *w.P, Device: store.FieldDevice(*w.D), Navigation: *w.NT}
	if !validPath(b.Path) {
		return Beacon{}, refuse("p must be a page path without query or fragment")
	}
	if !b.Device.Valid() {
		return Beacon{}, refuse("d must be phone or desktop")
	}
	if !slices.Contains(store.BeaconNavigations, b.Navigation) {
		return Beacon{}, refuse("nt is not a navigation type")
	}
	if len(w.M) > MaxFigures {
		return Beacon{}, refuse("the beacon has too many figures")
	}
	for _, m := range w.M {
		f, err := parseFigure(m)
		if err != nil {
			return Beacon{}, err
		}
		if f.Metric == store.BeaconNavMetric && b.Navigation != "soft" {
			return Beacon{}, refuse("a nav figure is a soft navigation's")
		}
		b.Figures = append(b.Figures, f)
	}
	return b, nil
}

func parseFigure(m wireFigure) (Figure, error) {
	if m.N == nil {
		return Figure{}, refuse("a figure needs n")
	}
	f := Figure{Metric: *m.N}
	if f.Metric == store.BeaconNavMetric {
		if m.V != nil || m.T != nil || m.U != nil || m.E != nil || m.I != nil || m.R != nil || m.S != nil {
			return Figure{}, refuse("a nav figure carries nothing")
		}
		return f, nil
	}
	max, ok := store.BeaconRange(f.Metric)
	if !ok {
		return Figure{}, refuse("n is not a field metric")
	}
	if m.V == nil || !inRange(*m.V, max) {
		return Figure{}, refuse(f.Metric + " value is missing or outside its plausible range")
	}
	f.Value = *m.V
	if m.T != nil {
		if !validText(*m.T, 800) {
			return Figure{}, refuse("t must be a selector of printable text, at most 800 bytes")
		}
		f.Target = *m.T
	}
	if m.U != nil {
		if f.Metric != "lcp" {
			return Figure{}, refuse("u is LCP's")
		}
		u, ok := resourceURL(*m.U)
		if !ok {
			return Figure{}, refuse("u must be an http(s) URL without query or fragment")
		}
		f.Resource = u
	}
	if f.Metric != "inp" {
		if m.E != nil || m.I != nil || m.R != nil || m.S != nil {
			return Figure{}, refuse("e, i, r and s are INP's")
		}
		return f, nil
	}
	if m.E == nil || !slices.Contains(EventTypes, *m.E) {
		return Figure{}, refuse("e must be an interaction's event type")
	}
	f.EventType = *m.E
	phaseMax, _ := store.BeaconRange(store.BeaconPhaseMetric)
	for _, p := range []struct {
		v   *float64
		dst *float64
	}{{m.I, &f.InputDelay}, {m.R, &f.ProcessingDuration}, {m.S, &f.PresentationDelay}} {
		if p.v == nil || !inRange(*p.v, phaseMax) {
			return Figure{}, refuse("INP's phases i, r and s must be in range")
		}
		*p.dst = *p.v
	}
	// The phases add up to the value (web-vitals' definition); a beacon whose phases claim
	// more than the interaction took, beyond rounding, is made up.
	if f.InputDelay+f.ProcessingDuration+f.PresentationDelay > f.Value+8 {
		return Figure{}, refuse("INP's phases add up to more than its value")
	}
	return f, nil
}

func inRange(v, max float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= max }

func validPath(p string) bool {
	return len(p) >= 1 && len(p) <= 300 && p[0] == '/' && !strings.HasPrefix(p, "//") && !strings.ContainsAny(p, "?#\\") && validText(p, 300)
}

// validText is UTF-8 printable text (no control or format characters) of at most max bytes.
func validText(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}

// resourceURL is an absolute http(s) URL without query or fragment (the script strips them),
// of at most 300 bytes.
func resourceURL(s string) (string, bool) {
	if !validText(s, 300) || strings.ContainsAny(s, "?#") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", false
	}
	return s, true
}
