package notify

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

// TestReadmeVerifiesTheSignatureWithOpenssl runs the openssl lines of docs/alerts.md (the
// README's reference; "Verifying the signed webhook") on a signed event:
// a fresh delivery verifies; one signed six minutes ago, or with a changed body, does not.
func TestReadmeVerifiesTheSignatureWithOpenssl(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- verify-signature -->\n```sh\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- /verify-signature -->")
	if !ok || !ok2 {
		t.Fatal("docs/alerts.md lacks the verify-signature block")
	}
	secret := []byte("whsec_3f9a0c1d")
	e := sample()[0]
	e.Site.Name = "Shop 'quoted' $(not run) \\ é"
	for _, c := range []struct {
		name   string
		signed time.Time
		tamper bool
		want   string
	}{
		{"a fresh delivery", time.Now(), false, "verified"},
		{"a delivery signed six minutes ago", time.Now().Add(-6 * time.Minute), false, "rejected"},
		{"a changed body", time.Now(), true, "rejected"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, h, err := Render(KindWebhook, e, secret, c.signed)
			if err != nil {
				t.Fatal(err)
			}
			if c.tamper {
				body = []byte(strings.Replace(string(body), "Shop", "Sh0p", 1))
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "body.json"), body, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", block)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "SIG="+h.Get("X-SitePulse-Signature"), "SECRET="+string(secret))
			out, err := cmd.CombinedOutput()
			if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
				t.Errorf("docs/alerts.md's lines said %q (err %v), want %q", got, err, c.want)
			}
		})
	}
}

// TestWebhookBodyMatchesTheReadme checks real webhook bodies of every event type, and the
// documented example, against the documented field list (docs/alerts.md, "The signed webhook's
// body"): no field outside it, none of its required fields missing, each of its type.
func TestWebhookBodyMatchesTheReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	fields := readmeFields(t, string(readme))
	_, example, _ := strings.Cut(string(readme), "## The signed webhook's body")
	_, example, _ = strings.Cut(example, "```json\n")
	example, _, _ = strings.Cut(example, "```")
	bodies := map[string][]byte{"the documented example": []byte(example)}
	events := append(sample(), TestEvent("evt_t", now, EventRef{ID: "u1", Name: "Personal"}, store.Site{}, "https://sitepulse.example.com/"))
	for _, e := range events {
		body, _, err := Render(KindWebhook, e, []byte("k"), now)
		if err != nil {
			t.Fatal(err)
		}
		bodies[e.Type] = body
	}
	if !strings.Contains(string(bodies[EventRegressionConfirmed]), `"cause":"Performance -36`) {
		t.Fatalf("the sample regression carries no cause: %s", bodies[EventRegressionConfirmed])
	}
	for name, body := range bodies {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range checkShape(fields, "", v) {
			t.Errorf("%s: %s", name, p)
		}
	}
}

// field is a row of the README's webhook field list.
type field struct {
	types    []string // JSON types: string, number, boolean, object, array, null
	optional bool
}

// readmeFields reads the table between <!-- webhook-fields --> markers: `path` | type | ...,
// a path's {a,b} expanded to each name.
func readmeFields(t *testing.T, readme string) map[string]field {
	_, table, ok := strings.Cut(readme, "<!-- webhook-fields -->\n")
	table, _, ok2 := strings.Cut(table, "<!-- /webhook-fields -->")
	if !ok || !ok2 {
		t.Fatal("docs/alerts.md lacks the webhook-fields table")
	}
	out := map[string]field{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[2:] {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("docs/alerts.md webhook field row %q", line)
		}
		path := strings.Trim(strings.TrimSpace(cells[1]), "`")
		f := field{}
		for _, w := range strings.FieldsFunc(cells[2], func(r rune) bool { return r == ' ' || r == ',' }) {
			switch w {
			case "or":
			case "optional":
				f.optional = true
			default:
				f.types = append(f.types, w)
			}
		}
		for _, p := range expand(path) {
			out[p] = f
		}
	}
	return out
}

// expand writes out each {a,b,...} of path: "x.{a,b}[].{c,d}" is four paths.
func expand(path string) []string {
	i := strings.Index(path, "{")
	if i < 0 {
		return []string{path}
	}
	j := strings.Index(path[i:], "}") + i
	var out []string
	for _, alt := range strings.Split(path[i+1:j], ",") {
		out = append(out, expand(path[:i]+alt+path[j+1:])...)
	}
	return out
}

// checkShape lists what of v, at path, the field list does not allow.
func checkShape(fields map[string]field, path string, v any) []string {
	var problems []string
	var typ string
	switch x := v.(type) {
	case map[string]any:
		typ = "object"
		for k, sub := range x {
			problems = append(problems, checkShape(fields, join(path, k), sub)...)
		}
		for p, f := range fields {
			parent, key := "", p
			if i := strings.LastIndex(p, "."); i >= 0 {
				parent, key = p[:i], p[i+1:]
			}
			if _, present := x[key]; parent == path && !f.optional && !strings.HasSuffix(key, "[]") && !present {
				problems = append(problems, "lacks "+p)
			}
		}
	case []any:
		typ = "array"
		for _, sub := range x {
			problems = append(problems, checkShape(fields, path+"[]", sub)...)
		}
	case string:
		typ = "string"
	case float64:
		typ = "number"
	case bool:
		typ = "boolean"
	case nil:
		typ = "null"
	}
	if path == "" {
		return problems
	}
	f, ok := fields[path]
	if !ok {
		return append(problems, path+" is not in the documented field list")
	}
	if !slices.Contains(f.types, typ) {
		problems = append(problems, fmt.Sprintf("%s is %s, docs/alerts.md says %s", path, typ, strings.Join(f.types, " or ")))
	}
	return problems
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
