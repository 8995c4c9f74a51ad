// Package corpus reads testdata/why, the before/after pairs of real Lighthouse runs that keep
// "what changed" honest (issue 42), with each pair's ground truth, and scores a Comparison of a
// pair against it. The tests of analysis (pure), of the scanner's pipeline (PSI double, both
// stores) and of the local Lighthouse backend (real Chromium) all score with it.
package corpus

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sitepulse/scanner/analysis"
)

// Truth is what a pair's truth.json says, written before the pair was ever compared.
type Truth struct {
	Change   string `json:"change"`   // the change made, one line
	Page     string `json:"page"`     // the page's path
	Strategy string `json:"strategy"` // mobile or desktop
	// Before and After are the runs' files beside the truth (default before.json, after.json);
	// Shape is "psi" (a PSI v5 response, the default) or "lhr" (a Lighthouse report as is).
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	Shape  string `json:"shape,omitempty"`
	// NoCause: the page did not change, or got faster; no cause may name a change.
	NoCause bool `json:"noCause,omitempty"`
	// Causes are the metrics the change makes worse, with what their cause must name. Those
	// that got worse beyond noise in the comparison are scored; none getting worse is wrong (a
	// run made again live may leave one of them within noise, never all).
	Causes []Want `json:"causes,omitempty"`
	// MetricsPresent are metrics both runs must have a value for (an older report shape).
	MetricsPresent []string `json:"metricsPresent,omitempty"`
	Note           string   `json:"note,omitempty"`
}

// Want is one regressed metric and the words its cause names. A cause is right when its first
// reason (the first sentence after the metric's head) names one of Names and none of MustNot;
// partial when that first reason names one of Partial or a Name with a MustNot, or only a later
// reason names one of Names; wrong otherwise (no cause, "likely lab variance", another change).
type Want struct {
	Metric  string   `json:"metric"`
	Names   []string `json:"names"`
	Partial []string `json:"partial,omitempty"`
	MustNot []string `json:"mustNot,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// Pair is one pair of the corpus: its truth and its two runs' bytes.
type Pair struct {
	Name          string // the folder's name, or lhci/<name>
	Truth         Truth
	Before, After []byte
}

// Verdicts of a pair.
const (
	Right    = "right"
	Partial  = "partial"
	Wrong    = "wrong"
	Invented = "invented" // a cause named on a page that did not change or got faster
)

// Load reads every pair under root (testdata/why): <pair>/truth.json and lhci/<name>.truth.json.
func Load(root string) ([]Pair, error) {
	files, err := filepath.Glob(filepath.Join(root, "*", "truth.json"))
	if err != nil {
		return nil, err
	}
	lhci, err := filepath.Glob(filepath.Join(root, "lhci", "*.truth.json"))
	if err != nil {
		return nil, err
	}
	var out []Pair
	for _, f := range append(files, lhci...) {
		p, err := load(root, f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func load(root, file string) (Pair, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Pair{}, err
	}
	var p Pair
	if err := json.Unmarshal(b, &p.Truth); err != nil {
		return Pair{}, fmt.Errorf("%s: %w", file, err)
	}
	dir := filepath.Dir(file)
	p.Name, _ = filepath.Rel(root, dir)
	if base := filepath.Base(file); base != "truth.json" {
		p.Name = filepath.Join(p.Name, strings.TrimSuffix(base, ".truth.json"))
	}
	t := &p.Truth
	if t.Before == "" {
		t.Before, t.After = "before.json", "after.json"
	}
	if t.Shape == "" {
		t.Shape = "psi"
	}
	if t.NoCause == (len(t.Causes) > 0) {
		return Pair{}, fmt.Errorf("%s: a truth has causes or noCause, one of them", file)
	}
	if p.Before, err = read(filepath.Join(dir, t.Before)); err != nil {
		return Pair{}, err
	}
	if p.After, err = read(filepath.Join(dir, t.After)); err != nil {
		return Pair{}, err
	}
	return p, nil
}

// read reads a run, gunzipping a .gz (the Lighthouse CI pairs are kept verbatim, gzipped).
func read(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil || !strings.HasSuffix(file, ".gz") {
		return b, err
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return io.ReadAll(z)
}

// Score is a pair's verdict on a comparison of its two runs, with the sentence that decided it.
type Score struct {
	Pair    string
	Verdict string
	Says    string
}

// Score scores c, the comparison of p's runs, against p's truth.
func (p Pair) Score(c analysis.Comparison) Score {
	s := Score{Pair: p.Name, Verdict: Right}
	for _, m := range p.Truth.MetricsPresent {
		if i := slices.IndexFunc(c.Metrics, func(x analysis.MetricChange) bool { return x.Metric == m }); i < 0 || c.Metrics[i].Before == nil || c.Metrics[i].After == nil {
			return Score{Pair: p.Name, Verdict: Wrong, Says: m + " is empty in a run"}
		}
	}
	if p.Truth.NoCause {
		for _, x := range c.Causes {
			if len(x.Reasons) > 0 {
				return Score{Pair: p.Name, Verdict: Invented, Says: x.Sentence}
			}
		}
		s.Says = c.Summary
		return s
	}
	var says []string
	scored := 0
	for _, w := range p.Truth.Causes {
		if !c.Regressed(w.Metric) {
			says = append(says, w.Metric+" did not get worse beyond noise")
			continue
		}
		scored++
		v, sentence := w.score(c)
		says = append(says, sentence)
		if rank(v) > rank(s.Verdict) {
			s.Verdict = v
		}
	}
	if scored == 0 { // the regression was not seen at all
		s.Verdict = Wrong
	}
	s.Says = strings.Join(says, " | ")
	return s
}

func rank(v string) int { return map[string]int{Right: 0, Partial: 1, Wrong: 2, Invented: 3}[v] }

func (w Want) score(c analysis.Comparison) (string, string) {
	cause, ok := c.CauseOf(w.Metric)
	if !ok {
		return Wrong, w.Metric + " got worse and has no cause"
	}
	if len(cause.Reasons) == 0 {
		return Wrong, cause.Sentence
	}
	first := strings.ToLower(cause.Reasons[0].Text)
	has := func(s string, words []string) bool {
		return slices.ContainsFunc(words, func(x string) bool { return strings.Contains(s, strings.ToLower(x)) })
	}
	switch {
	case has(first, w.Names) && !has(first, w.MustNot):
		return Right, cause.Sentence
	case has(first, w.Names) || has(first, w.Partial):
		return Partial, cause.Sentence
	}
	for _, r := range cause.Reasons[1:] {
		if has(strings.ToLower(r.Text), w.Names) {
			return Partial, cause.Sentence
		}
	}
	return Wrong, cause.Sentence
}

// Tally is the corpus's score line: "N of M right, K partial, J invented".
func Tally(scores []Score) (line string, right int) {
	n := map[string]int{}
	for _, s := range scores {
		n[s.Verdict]++
	}
	return fmt.Sprintf("%d of %d right, %d partial, %d invented", n[Right], len(scores), n[Partial], n[Invented]), n[Right]
}
