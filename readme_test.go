package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The docs are README.md (the front door), docs/*.md (the reference) and .ci/README.md (the
// figures). repoPath is a path they name: a markdown link's target, relative to the file that
// links, or a backticked path under a top-level directory of the repository.
var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codePath = regexp.MustCompile("`((?:handlers|mcp|oauth|scanner|store|testdata|docs|\\.ci)/[A-Za-z0-9_./-]*|main\\.go|config\\.go)`")
	heading  = regexp.MustCompile(`(?m)^#{2,3} (.+)$`)
)

// docFiles are the Markdown files a reader follows: the README, every docs/ page, .ci/README.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	return append([]string{"README.md", ".ci/README.md"}, pages...)
}

// anchors are the ids a Markdown file's headings make.
func anchors(t *testing.T, name string) map[string]bool {
	t.Helper()
	body, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, h := range regexp.MustCompile(`(?m)^#{1,3} (.+)$`).FindAllStringSubmatch(string(body), -1) {
		out[anchor(h[1])] = true
	}
	return out
}

// TestReadmeReferencesExist: every file the docs point at is in the repository, and every link to
// a section (in the same file or another) has its heading, so a newcomer following them never
// lands nowhere.
func TestReadmeReferencesExist(t *testing.T) {
	for _, name := range docFiles(t) {
		body, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(body)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			if file == "" {
				file = name
			} else {
				file = filepath.Join(filepath.Dir(name), file)
				if !exists(t, name, file) {
					continue
				}
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !anchors(t, file)[frag] {
				t.Errorf("%s links to %s, which no heading of %s makes", name, target, file)
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

func exists(t *testing.T, doc, path string) bool {
	t.Helper()
	if _, err := os.Stat(strings.TrimSuffix(path, "/")); err != nil {
		t.Errorf("%s names %s, which is not in the repository", doc, path)
		return false
	}
	return true
}

// TestReadmeContentsIsComplete: the README's "Where the rest lives" names every docs/ page and
// every section and subsection of each, in order, so whatever a newcomer looks for is findable
// from the front door (issue 37; issue 43 moved the reference into docs/).
func TestReadmeContentsIsComplete(t *testing.T) {
	body, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	const title = "\n## Where the rest lives\n"
	start := strings.Index(text, title)
	if start < 0 {
		t.Fatal("README.md has no " + strings.TrimSpace(title))
	}
	rest := text[start+len(title):]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	// Each page's links, in the README's order: the page itself, then its sections.
	listed := map[string][]string{}
	for _, m := range regexp.MustCompile(`\]\((docs/[^)#]+\.md)(#[^)]+)?\)`).FindAllStringSubmatch(rest, -1) {
		listed[m[1]] = append(listed[m[1]], m[1]+m[2])
	}
	pages, _ := filepath.Glob("docs/*.md")
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{page}
		for _, h := range heading.FindAllStringSubmatch(string(b), -1) {
			want = append(want, page+"#"+anchor(h[1]))
		}
		if got := listed[page]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("the README's %q lists %s as\n  %v\nnot as the page and its sections are\n  %v", strings.TrimSpace(title), page, got, want)
		}
		delete(listed, page)
	}
	for page := range listed {
		t.Errorf("the README lists %s, which is not a page of docs/", page)
	}
}

// TestReadmeIsAFrontDoor: the README stays about 3,000 words (issue 43: 17,705 had grown into a
// reference nobody finishes); what it does not say, docs/ does.
func TestReadmeIsAFrontDoor(t *testing.T) {
	body, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(body))); n > 3500 {
		t.Errorf("README.md has %d words; keep it near 3,000 and move the rest to docs/", n)
	}
}

// TestContainerfileIsStaticAndNonRoot lints the container recipe where no container tool runs
// it (.ci/container.sh builds and runs it where one does): an empty or distroless base, a
// numeric non-root user, the binary static (CGO_ENABLED=0) and reproducible (-trimpath), started
// in exec form.
func TestContainerfileIsStaticAndNonRoot(t *testing.T) {
	body, err := os.ReadFile("docs/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	var from, user, entrypoint string
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			from, user = f[1], "" // the last stage is the image; a USER belongs to its stage
		case "USER":
			user = f[1]
		case "ENTRYPOINT", "CMD":
			entrypoint = strings.TrimSpace(strings.TrimPrefix(line, f[0]))
		}
	}
	if from != "scratch" && !strings.Contains(from, "distroless") {
		t.Errorf("the image is FROM %q, want scratch or distroless", from)
	}
	uid, gid, _ := strings.Cut(user, ":")
	for _, id := range []string{uid, gid} {
		if n, err := strconv.Atoi(id); id != "" && (err != nil || n == 0) {
			t.Errorf("USER %q: want a numeric, non-root user and group", user)
		}
	}
	if uid == "" {
		t.Error("the image has no USER: it would run as root")
	}
	if !strings.HasPrefix(entrypoint, "[") {
		t.Errorf("ENTRYPOINT %q: want the exec form, so SIGTERM reaches the server (draining)", entrypoint)
	}
	if !strings.Contains(string(body), "CGO_ENABLED=0 go build -trimpath") {
		t.Error("the recipe does not build the binary with CGO_ENABLED=0 go build -trimpath")
	}
}
