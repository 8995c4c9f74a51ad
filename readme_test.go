package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// repoPath is a path the READMEs name: a markdown link's target or a backticked path under a
// top-level directory of the repository.
var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codePath = regexp.MustCompile("`((?:handlers|mcp|oauth|scanner|store|testdata|\\.ci)/[A-Za-z0-9_./-]*|main\\.go|config\\.go)`")
	heading  = regexp.MustCompile(`(?m)^#{2,3} (.+)$`)
)

// TestReadmeReferencesExist: every file the READMEs point at is in the repository, and every
// in-page link has its section, so a newcomer following them never lands nowhere.
func TestReadmeReferencesExist(t *testing.T) {
	for _, name := range []string{"README.md", ".ci/README.md"} {
		body, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(body)
		anchors := map[string]bool{}
		for _, h := range heading.FindAllStringSubmatch(text, -1) {
			anchors[anchor(h[1])] = true
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			switch {
			case strings.HasPrefix(target, "#"):
				if !anchors[target[1:]] {
					t.Errorf("%s links to #%s, which no heading makes", name, target[1:])
				}
			case strings.Contains(target, "://"):
			default:
				exists(t, name, target)
			}
		}
		for _, m := range codePath.FindAllStringSubmatch(text, -1) {
			if !strings.ContainsAny(m[1], "*{") {
				exists(t, name, m[1])
			}
		}
	}
}

// anchor is the id GitHub gives a heading.
func anchor(h string) string {
	h = strings.ToLower(h)
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func exists(t *testing.T, readme, path string) {
	t.Helper()
	if _, err := os.Stat(strings.TrimSuffix(path, "/")); err != nil {
		t.Errorf("%s names %s, which is not in the repository", readme, path)
	}
}

// TestReadmeContentsIsComplete: the README's contents list names every section and subsection
// after it, in order, so whatever a newcomer looks for is findable from the top (issue 37).
func TestReadmeContentsIsComplete(t *testing.T) {
	body, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	start := strings.Index(text, "\n## Contents\n")
	if start < 0 {
		t.Fatal("README.md has no ## Contents")
	}
	rest := text[start+len("\n## Contents\n"):]
	end := strings.Index(rest, "\n## ")
	if end < 0 {
		t.Fatal("nothing follows the contents")
	}
	var listed, want []string
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(rest[:end], -1) {
		listed = append(listed, m[1])
	}
	for _, h := range heading.FindAllStringSubmatch(rest[end:], -1) {
		want = append(want, anchor(h[1]))
	}
	if strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Errorf("the contents list\n  %v\nis not the sections after it\n  %v", listed, want)
	}
}
