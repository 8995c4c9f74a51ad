package notify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// hostile is an event whose every user-given string is Markdown a chat client would render: a
// site named as a link, a page path, the publisher's display name (Webflow's, whoever set it)
// and a reason quoting a URL, each hiding a link to a phishing page.
func hostile() Event {
	by := "[Ana](https://evil.example/login) **from IT**"
	e := sample()[0]
	e.Site.Name = "[Click to keep your account](https://evil.example/phish) _urgent_"
	e.Scan.PublishedBy = &by
	e.Data.Regressions = []analysis.Regression{{PagePath: "/[reset password](https://evil.example/r)", Strategy: "mobile", Metric: "lcp", From: 1200, To: 5200}}
	return e
}

// TestTeamsUserTextIsNeverMarkdown: a Teams TextBlock reads its text as Markdown, so a site
// named "[Click](https://evil…)" became a link in the team's channel. The card carries every
// text in RichTextBlock TextRuns, which Adaptive Cards show as written (no Markdown): each
// hostile string arrives verbatim as text, and no element reads Markdown.
func TestTeamsUserTextIsNeverMarkdown(t *testing.T) {
	for _, e := range append(sample(), hostile(), TestEvent("evt_t", now, EventRef{ID: "u1", Name: "[x](https://evil.example)"}, store.Site{Name: "[y](https://evil.example)"}, "https://sitepulse.example.com/")) {
		body, _, err := Render(KindTeams, e, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		var msg struct {
			Attachments []struct {
				Content struct {
					Body []struct {
						Type    string `json:"type"`
						Text    string `json:"text"`
						Inlines []struct {
							Type string `json:"type"`
							Text string `json:"text"`
						} `json:"inlines"`
					} `json:"body"`
				} `json:"content"`
			} `json:"attachments"`
		}
		if err := json.Unmarshal(body, &msg); err != nil || len(msg.Attachments) != 1 {
			t.Fatalf("%s: %v %s", e.Type, err, body)
		}
		var texts []string
		for _, el := range msg.Attachments[0].Content.Body {
			if el.Type != "RichTextBlock" || el.Text != "" {
				t.Errorf("%s: a %s element %q: only RichTextBlocks, whose TextRuns are not Markdown, may carry text", e.Type, el.Type, el.Text)
			}
			for _, in := range el.Inlines {
				if in.Type != "TextRun" {
					t.Errorf("%s: inline %s, want TextRun", e.Type, in.Type)
				}
				texts = append(texts, in.Text)
			}
		}
		all := strings.Join(texts, "\n")
		if e.ID == hostile().ID && e.Site.Name == hostile().Site.Name {
			for _, want := range []string{hostile().Site.Name, *hostile().Scan.PublishedBy, "/[reset password](https://evil.example/r)"} {
				if !strings.Contains(all, want) {
					t.Errorf("the card's text lacks %q verbatim:\n%s", want, all)
				}
			}
		}
	}
}

// TestHostileMessagesMatchGoldenFiles keeps what each kind makes of the hostile event, for
// review: Teams as plain TextRuns, Slack with <, > and & escaped, Discord with Markdown escaped.
func TestHostileMessagesMatchGoldenFiles(t *testing.T) {
	for _, kind := range []string{KindSlack, KindTeams, KindDiscord} {
		body, _, err := Render(kind, hostile(), nil, now)
		if err != nil {
			t.Fatal(err)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, body, "", "  "); err != nil {
			t.Fatal(err)
		}
		golden(t, kind+"-hostile.json", append(pretty.Bytes(), '\n'))
	}
}
