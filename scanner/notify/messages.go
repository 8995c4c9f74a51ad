package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// Channel kinds: where a message goes and so how it is written.
const (
	KindSlack   = store.ChannelSlack
	KindTeams   = store.ChannelTeams
	KindDiscord = store.ChannelDiscord
	KindWebhook = store.ChannelWebhook
)

// topLines is how many broken budgets a chat message lists, and topPages how many regressed
// pages (each with its regressions and its cause); the rest are counted.
const (
	topLines = 3
	topPages = 5
)

// Render writes an event for a channel kind: the request body and the headers to send with it.
// The signed webhook's headers carry the event type, the delivery id (the event id) and the
// signature under secret at now.
func Render(kind string, e Event, secret []byte, now time.Time) ([]byte, http.Header, error) {
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"SitePulse-Alerts/1"}}
	var msg any
	switch kind {
	case KindSlack:
		msg = slackMessage(e)
	case KindTeams:
		msg = teamsMessage(e)
	case KindDiscord:
		msg = discordMessage(e)
	case KindWebhook:
		if e.Data.Changes == nil { // a delivery planned before events carried changes
			e.Data.Changes = []EventChange{}
		}
		body, err := json.Marshal(e)
		if err != nil {
			return nil, nil, err
		}
		h.Set("X-SitePulse-Event", e.Type)
		h.Set("X-SitePulse-Delivery", e.ID)
		h.Set("X-SitePulse-Signature", Sign(secret, now, body))
		return body, h, nil
	default:
		return nil, nil, fmt.Errorf("notify: no message format for channel kind %q", kind)
	}
	body, err := json.Marshal(msg)
	return body, h, err
}

// Sign is the X-SitePulse-Signature value of a body sent at t: "t=<unix seconds>,v1=<hex
// HMAC-SHA256 of "<t>.<body>">", Stripe's scheme, so the timestamp is covered too.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a signature header as a receiver should: some v1 matches in constant time and
// t is within tolerance of now (either side), so a captured request cannot be replayed later.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errors.New("signature header malformed")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("signature timestamp outside the tolerance")
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return errors.New("signature does not match")
}

// Email writes an event as an e-mail's subject and plain-text body: what the chat messages say,
// with the link written out. It is what an email channel sends each member who has regression
// e-mails on.
func Email(e Event) (subject, body string) {
	s := summarize(e)
	var b strings.Builder
	b.WriteString(s.title + "\n\n")
	for i, l := range s.lines {
		b.WriteString("  " + l + "\n")
		if w := s.because(i); w != "" {
			b.WriteString("    " + w + "\n")
		}
	}
	b.WriteString("\n" + s.context + "\n")
	if s.url != "" {
		b.WriteString(s.button + ": " + s.url + "\n")
	}
	if ws := oneLine(e.Workspace.Name); ws != "" {
		b.WriteString("\nYou get this e-mail because regression e-mails are on for you in the workspace " + ws + " in SitePulse.\n")
	}
	return "SitePulse: " + s.title, b.String()
}

// summary is what every chat message says, in plain text: a title, the top lines (each with
// the sentence that explains it in why, "" for none), and the context line (who published,
// which scan).
type summary struct {
	title   string
	lines   []string
	why     []string
	context string
	url     string
	button  string
}

func summarize(e Event) summary {
	site := oneLine(e.Site.Name)
	if site == "" {
		site = oneLine(e.Site.Domain)
	}
	s := summary{url: e.Scan.URL, button: "Open scan"}
	switch e.Type {
	case EventRegressionConfirmed:
		n := len(e.Data.Regressions)
		s.title = fmt.Sprintf("%d confirmed %s on %s", n, plural(n, "regression", "regressions"), site)
		s.lines, s.why = regressionLines(e.Data)
		for _, f := range e.Data.Field { // what real users measured of them, when the field knows
			if f.Status != analysis.FieldNoData && len(s.lines) < topLines+2 {
				s.lines, s.why = append(s.lines, "Field ("+string(f.Source)+"): "+clip(oneLine(f.Text), MaxEventText)), append(s.why, "")
			}
		}
	case EventBudgetBroken:
		n := len(e.Data.Violations)
		s.title = fmt.Sprintf("%d %s broken on %s", n, plural(n, "budget", "budgets"), site)
		for i, v := range e.Data.Violations {
			if i == topLines {
				s.lines = append(s.lines, fmt.Sprintf("and %d more", n-topLines))
				break
			}
			limit := "at least"
			if v.Operator == store.OpMax {
				limit = "at most"
			}
			line := fmt.Sprintf("%s %s, budget %s %s", analysis.Label(v.Metric), FmtMetric(v.Metric, v.Actual), limit, FmtMetric(v.Metric, v.Threshold))
			if v.PagePath != "" {
				line += fmt.Sprintf(" (%s %s)", oneLine(v.PagePath), v.Strategy)
			}
			s.lines = append(s.lines, line)
		}
	case EventBudgetRecovered:
		s.title = "Budgets back within limits on " + site
		s.lines = []string{"Every budget passes again."}
	case EventScanFailed:
		s.title = "Scan failed on " + site
		s.lines = []string{"Reason: " + oneLine(e.Data.Reason)}
	case EventFieldRegression:
		if e.Scan.ID == "" { // the daily field check's: the link is the site's page
			s.button = "Open site"
		}
		n := len(e.Data.FieldOnly)
		s.title = fmt.Sprintf("%d field-only %s on %s: real users felt what the lab did not see", n, plural(n, "regression", "regressions"), site)
		for i, r := range e.Data.FieldOnly {
			if i == topLines {
				s.lines = append(s.lines, fmt.Sprintf("and %d more", n-topLines))
				break
			}
			s.lines = append(s.lines, clip(oneLine(r.Text), MaxEventText)+fmt.Sprintf(" (was %s)", FmtMetric(r.Metric, r.From)))
		}
	case store.EventTest:
		s.title = "Test message from SitePulse"
		s.lines = []string{oneLine(e.Data.Reason)}
	default:
		s.title = e.Type + " on " + site
	}
	ctx := []string{}
	if e.Scan.PublishedAt != nil {
		p := store.Publish{PublishedOn: *e.Scan.PublishedAt}
		if e.Scan.PublishedBy != nil {
			p.PublishedBy = oneLine(*e.Scan.PublishedBy)
		}
		ctx = append(ctx, p.Line())
	} else if e.Scan.Trigger != "" && e.Type != store.EventTest {
		ctx = append(ctx, "Started by "+e.Scan.Trigger)
	}
	ctx = append(ctx, oneLine(e.Site.Domain))
	if e.Scan.ID != "" {
		ctx = append(ctx, "scan "+e.Scan.ID)
	}
	if ctx = nonEmpty(ctx); len(ctx) == 0 {
		ctx = []string{"SitePulse"} // Slack refuses an empty context block, Discord an empty footer
	}
	s.context = strings.Join(ctx, " · ")
	if e.Type == store.EventTest {
		s.button = "Open SitePulse"
	}
	return s
}

// regressionLines are a regression event's top lines: one per page and strategy, the pages of
// the worst regressions first, each listing its regressions (before → after) and explained by
// the page's cause; past topPages pages, the rest are counted.
func regressionLines(d EventDetail) (lines, why []string) {
	type page struct {
		path  string
		strat store.Strategy
		regs  []string
	}
	var pages []*page
	for _, r := range d.Regressions {
		i := slices.IndexFunc(pages, func(p *page) bool { return p.path == r.PagePath && p.strat == r.Strategy })
		if i < 0 {
			i = len(pages)
			pages = append(pages, &page{path: r.PagePath, strat: r.Strategy})
		}
		pages[i].regs = append(pages[i].regs, fmt.Sprintf("%s %s → %s", analysis.Label(r.Metric), FmtMetric(r.Metric, r.From), FmtMetric(r.Metric, r.To)))
	}
	for i, p := range pages {
		if i == topPages {
			n := len(pages) - topPages
			lines, why = append(lines, fmt.Sprintf("and %d more %s", n, plural(n, "page", "pages"))), append(why, "")
			break
		}
		lines = append(lines, fmt.Sprintf("%s (%s): %s", oneLine(p.path), p.strat, strings.Join(p.regs, ", ")))
		cause := ""
		if j := slices.IndexFunc(d.Changes, func(c EventChange) bool { return c.PagePath == p.path && c.Strategy == p.strat }); j >= 0 {
			cause = whyLabel(d.Changes[j].Confidence) + oneLine(d.Changes[j].Cause)
		}
		why = append(why, cause)
	}
	return lines, why
}

// whyLabel heads a page's cause in a message: "Why: " when it is sure, "Why (low confidence): "
// when it is not (analysis.Hedge).
func whyLabel(confidence string) string {
	if h := analysis.Hedge(confidence); h != "" {
		return "Why (" + h + "): "
	}
	return "Why: "
}

// because is the sentence explaining line i, "" when none does.
func (s summary) because(i int) string {
	if i < len(s.why) {
		return s.why[i]
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func nonEmpty(in []string) []string {
	out := in[:0]
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// clip keeps a text within a platform's field limit, in runes, marking the cut.
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// slackEscape keeps user text from becoming Slack markup: mrkdwn reads &, < and > as control
// characters (links and mentions such as <!channel>).
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackMessage is a Block Kit message: a section with the title and top lines and a button to
// the scan, and a context block with who published. text is the notification's fallback.
func slackMessage(e Event) map[string]any {
	s := summarize(e)
	text := "*" + slackEscape.Replace(s.title) + "*"
	for i, l := range s.lines {
		text += "\n• " + slackEscape.Replace(l)
		if w := s.because(i); w != "" {
			text += "\n    " + slackEscape.Replace(w)
		}
	}
	section := map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": clip(text, 3000)}}
	if s.url != "" {
		section["accessory"] = map[string]any{
			"type": "button", "text": map[string]any{"type": "plain_text", "text": s.button},
			"url": s.url, "action_id": "open_scan",
		}
	}
	return map[string]any{
		"text": clip(slackEscape.Replace(s.title), 3000),
		"blocks": []any{section, map[string]any{"type": "context", "elements": []any{
			map[string]any{"type": "mrkdwn", "text": clip(slackEscape.Replace(s.context), 3000)},
		}}},
	}
}

// teamsMessage is what a Microsoft Teams Workflows webhook ("Post to a channel when a webhook
// request is received") takes: a message with one Adaptive Card attachment. Every text is a
// RichTextBlock's TextRun, never a TextBlock: a TextBlock reads its text as Markdown, so a site
// or page or publisher named "[Click](https://…)" became a link in the team's channel, while a
// TextRun is shown as written, with its style set as properties. Nothing to escape, so no
// escape a client reads differently.
func teamsMessage(e Event) map[string]any {
	s := summarize(e)
	body := []any{teamsText(s.title, "weight", "Bolder", "size", "Medium")}
	for i, l := range s.lines {
		body = append(body, teamsText("• "+l))
		if w := s.because(i); w != "" {
			body = append(body, teamsText(w, "isSubtle", true))
		}
	}
	body = append(body, teamsText(s.context, "isSubtle", true, "size", "Small"))
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard", "version": "1.4", "body": body,
	}
	if s.url != "" {
		card["actions"] = []any{map[string]any{"type": "Action.OpenUrl", "title": s.button, "url": s.url}}
	}
	return map[string]any{"type": "message", "attachments": []any{map[string]any{
		"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": nil, "content": card,
	}}}
}

// teamsText is a RichTextBlock of one TextRun of text, with style given as property, value pairs.
func teamsText(text string, style ...any) map[string]any {
	run := map[string]any{"type": "TextRun", "text": text}
	for i := 0; i+1 < len(style); i += 2 {
		run[style[i].(string)] = style[i+1]
	}
	return map[string]any{"type": "RichTextBlock", "inlines": []any{run}}
}

// discordEscape keeps user text from becoming Discord markdown; mentions are switched off by
// allowed_mentions instead.
var discordEscape = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`, ">", `\>`, "[", `\[`, "]", `\]`)

// discordColors by event: red for bad news, green for recovery.
var discordColors = map[string]int{EventRegressionConfirmed: 0xd93025, EventBudgetBroken: 0xe37400, EventBudgetRecovered: 0x188038, EventScanFailed: 0x80868b}

// discordMessage is a Discord webhook message with one embed linking to the scan.
func discordMessage(e Event) map[string]any {
	s := summarize(e)
	lines := make([]string, 0, len(s.lines))
	for i, l := range s.lines {
		lines = append(lines, "• "+discordEscape.Replace(l))
		if w := s.because(i); w != "" {
			lines = append(lines, "  "+discordEscape.Replace(w))
		}
	}
	embed := map[string]any{
		"title": clip(discordEscape.Replace(s.title), 256), // Markdown, as the description: a site named "[x](https://…)" stays text
		// The footer is plain text: nothing to escape there.
		"description": clip(strings.Join(lines, "\n"), 4096),
		"color":       discordColors[e.Type],
		"footer":      map[string]any{"text": clip(s.context, 2048)},
		"timestamp":   e.CreatedAt.UTC().Format(time.RFC3339),
	}
	if s.url != "" {
		embed["url"] = s.url
	}
	return map[string]any{"username": "SitePulse", "embeds": []any{embed}, "allowed_mentions": map[string]any{"parse": []any{}}}
}
