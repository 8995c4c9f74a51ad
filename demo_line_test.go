package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sitepulse/mcp"
)

// TestDemoWebhookLineWorksEachTimeItIsPasted runs the printed webhook line in a shell, twice, as
// a newcomer pastes it (issue 24): each paste is a new delivery, not a replay the 24-hour guard
// ignores, and with PLATFORM_CLIENT_SECRET configured on the server (the Webflow offline flow)
// the line works in a shell that does not have it.
func TestDemoWebhookLineWorksEachTimeItIsPasted(t *testing.T) {
	needTools(t, "bash", "openssl", "curl")
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"secret made up for the demo", map[string]string{}},
		{"PLATFORM_CLIENT_SECRET set on the server only", map[string]string{"PLATFORM_CLIENT_ID": "dev-app", "PLATFORM_CLIENT_SECRET": "dev-secret"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, logs, _ := startRun(t, tt.env)
			line := printedLine(t, logs.String(), "/api/webhooks/platform")
			for i := 1; i <= 2; i++ {
				out, err := pasted(line) // a fresh terminal: no PLATFORM_CLIENT_SECRET
				if err != nil || strings.TrimSpace(string(out)) != `{"ok":true}` {
					t.Fatalf("paste %d: %v %s\nline: %s", i, err, out, line)
				}
			}
			got := logs.String()
			if strings.Contains(got, "delivery seen within 24 hours") {
				t.Errorf("the second paste was taken for a replay:\n%s", got)
			}
			if n := strings.Count(got, "scan enqueued") + strings.Count(got, "SCAN_ALREADY_ACTIVE"); n != 2 {
				t.Errorf("%d pastes reached the site, want 2:\n%s", n, got)
			}
		})
	}
}

// TestDemoMCPLineSpeaksTheNewestVersion runs the printed MCP line in a shell, as a newcomer
// pastes it (issue 43): it names the newest protocol version the server speaks, so it gets every
// tool (a request without MCP-Protocol-Version is served as 2025-03-26: the interface's nine).
func TestDemoMCPLineSpeaksTheNewestVersion(t *testing.T) {
	needTools(t, "bash", "curl")
	_, logs, _ := startRun(t, map[string]string{})
	line := printedLine(t, logs.String(), "/api/mcp")
	if newest := mcp.SupportedVersions[0]; !strings.Contains(line, "MCP-Protocol-Version: "+newest) {
		t.Errorf("the MCP line does not send MCP-Protocol-Version: %s:\n%s", newest, line)
	}
	out, err := pasted(line)
	if err != nil {
		t.Fatalf("%v %s\nline: %s", err, out, line)
	}
	var answer struct {
		Result struct {
			Tools []struct{ Name string }
		}
	}
	if err := json.Unmarshal(out, &answer); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got []string
	for _, tool := range answer.Result.Tools {
		got = append(got, tool.Name)
	}
	var want []string
	for _, d := range mcp.ToolDocs() {
		want = append(want, d.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the MCP line lists %d tools %v, want every tool (%d) %v", len(got), got, len(want), want)
	}
}

// TestDocsMCPCurlWorks runs the by-hand MCP curl of the README and of docs/mcp.md against a
// running server, with the demo's key (issue 43: it sent no MCP-Protocol-Version): it must answer
// list_sites at the newest version the server speaks.
func TestDocsMCPCurlWorks(t *testing.T) {
	needTools(t, "bash", "curl")
	base, logs, _ := startRun(t, map[string]string{})
	key := regexp.MustCompile(`demo api key: (svc_\S+)`).FindStringSubmatch(logs.String())
	if key == nil {
		t.Fatalf("no demo key printed:\n%s", logs)
	}
	for _, doc := range []string{"README.md", "docs/mcp.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var block string
		for _, part := range strings.Split(string(b), "```sh\n")[1:] {
			part, _, _ = strings.Cut(part, "```")
			if strings.Contains(part, "/api/mcp") && strings.Contains(part, "list_sites") {
				block = part
			}
		}
		if block == "" {
			t.Fatalf("%s has no MCP curl calling list_sites", doc)
		}
		if newest := mcp.SupportedVersions[0]; !strings.Contains(block, "MCP-Protocol-Version: "+newest) {
			t.Errorf("%s's curl does not send MCP-Protocol-Version: %s", doc, newest)
		}
		line := strings.NewReplacer("http://localhost:8080", base, "svc_...", key[1]).Replace(block)
		out, err := pasted(line)
		if err != nil || !strings.Contains(string(out), `"resultType":"complete"`) || !strings.Contains(string(out), `Demo Site`) {
			t.Errorf("%s's curl: %v\n%s", doc, err, out)
		}
	}
}

// needTools skips a test that pastes lines into a shell where one of their commands is missing.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
}

// printedLine is the last line of the server's output that holds has.
func printedLine(t *testing.T, logs, has string) string {
	t.Helper()
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, has) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no line with %s printed:\n%s", has, logs)
	}
	return line
}

// pasted runs line as a newcomer pastes it into a fresh terminal: bash, with nothing but PATH.
func pasted(line string) ([]byte, error) {
	sh := exec.Command("bash", "-c", line)
	sh.Env = []string{"PATH=" + os.Getenv("PATH")}
	return sh.CombinedOutput()
}
