package analysis_test

import (
	"path/filepath"
	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/analysis/corpus"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// corpusRoot is testdata/why: real Lighthouse 13 pairs of the sample site's variants, each one
// small real change (or none), and the Lighthouse CI server's public pairs, each with the
// ground truth written before it was ever compared (testdata/why/README.md).
var corpusRoot = filepath.Join("..", "..", "testdata", "why")

// extract is a corpus run through the project's real extractor for its shape.
func extract(t *testing.T, name, shape string, b []byte) store.PageResult {
	t.Helper()
	extract := lighthouse.ExtractPSI
	if shape == "lhr" {
		extract = lighthouse.ExtractLighthouse
	}
	r, err := extract(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// TestCorpus: on every pair of the corpus Compare names the change as the first sentence of
// the cause of the page's regressed metric (right), and names no cause on a page that did not
// change or got faster (else invented). Issue 42: the corpus passes at 100%.
func TestCorpus(t *testing.T) {
	pairs, err := corpus.Load(corpusRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) < 15 {
		t.Fatalf("%d pairs in the corpus, want at least 12 of the sample site's and the Lighthouse CI's", len(pairs))
	}
	var scores []corpus.Score
	for _, p := range pairs {
		before := extract(t, p.Name, p.Truth.Shape, p.Before)
		after := extract(t, p.Name, p.Truth.Shape, p.After)
		s := p.Score(analysis.Compare(before, after))
		scores = append(scores, s)
		t.Logf("%-8s %-32s %s", s.Verdict, s.Pair, s.Says)
	}
	line, right := corpus.Tally(scores)
	t.Log(line)
	if right < len(scores) {
		t.Errorf("the corpus scores %s; want every pair right", line)
	}
}
