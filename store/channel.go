package store

import (
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Channel kinds: where alerts go. Email has no URL: it e-mails the event to the workspace's
// members who have regression e-mails on (Member.NotifyRegressions), through SMTP_ADDR.
const (
	ChannelSlack   = "slack"
	ChannelTeams   = "teams"
	ChannelDiscord = "discord"
	ChannelWebhook = "webhook"
	ChannelEmail   = "email"
)

// ChannelKinds in the order the Notifications page offers them.
var ChannelKinds = []string{ChannelSlack, ChannelTeams, ChannelDiscord, ChannelWebhook, ChannelEmail}

// Alert events a channel may receive: changes that matter, never states.
const (
	EventRegressionConfirmed = "regression.confirmed"
	EventBudgetBroken        = "budget.broken"
	EventBudgetRecovered     = "budget.recovered"
	EventScanFailed          = "scan.failed"
	// EventFieldRegression is a field-only regression (DESIGN §19): real users' p75 crossed
	// into a worse band while the lab saw nothing.
	EventFieldRegression = "field.regression"
	EventTest            = "test" // the Send test button's, never subscribed to
	// EventAudit is every line of the workspace's security log, sent to a signed webhook only
	// (a SIEM); only owners subscribe a channel to it (docs/audit-log.md).
	EventAudit = "audit"
)

// EventNames are the event types as the pages name them: people read these, programs the ids.
var EventNames = map[string]string{
	EventRegressionConfirmed: "Regression confirmed",
	EventBudgetBroken:        "Budget broken",
	EventBudgetRecovered:     "Budgets met again",
	EventScanFailed:          "Scan failed",
	EventFieldRegression:     "Field-only regression",
	EventTest:                "Test message",
	EventAudit:               "Audit log (security events; signed webhook, owners only)",
}

// EventTypes are the events a channel may subscribe to, in the page's order.
var EventTypes = []string{EventRegressionConfirmed, EventBudgetBroken, EventBudgetRecovered, EventScanFailed, EventFieldRegression, EventAudit}

// Channel is where a workspace's alerts go. URLSealed and SecretSealed are sealed by the caller
// (PLATFORM_TOKEN_KEY, bound to the workspace id): a Slack or Discord webhook URL is a
// credential, and the webhook secret must be used again to sign. SiteIDs empty means every site
// of the workspace.
type Channel struct {
	ID           string
	WorkspaceID  string
	Kind         string
	Name         string
	URLSealed    string
	SecretSealed string
	Events       []string
	SiteIDs      []string
	CreatedAt    time.Time
	FailingSince *time.Time
}

// MaxChannelsPerWorkspace bounds what one workspace may configure.
const MaxChannelsPerWorkspace = 20

// Validate checks what a person wrote: a name shown to others, a known kind, events it may
// receive (at least one), and a sealed URL for every kind but email.
func (c *Channel) Validate() error {
	var errs []error
	c.Name = strings.TrimSpace(c.Name)
	switch {
	case c.Name == "":
		errs = append(errs, &InvalidError{"name", "Give the channel a name."})
	case utf8.RuneCountInString(c.Name) > 100:
		errs = append(errs, &InvalidError{"name", "A channel name has at most 100 characters."})
	case DisplayTextProblem(c.Name) != "":
		errs = append(errs, &InvalidError{"name", "The name " + DisplayTextProblem(c.Name) + "."})
	}
	if !slices.Contains(ChannelKinds, c.Kind) {
		errs = append(errs, &InvalidError{"kind", "Choose Slack, Microsoft Teams, Discord, webhook or e-mail."})
	}
	if c.Kind != ChannelEmail && c.URLSealed == "" {
		errs = append(errs, &InvalidError{"url", "Paste the webhook URL."})
	}
	events := []string{}
	for _, e := range EventTypes { // the page's order, each once
		if slices.Contains(c.Events, e) {
			events = append(events, e)
		}
	}
	if len(events) == 0 || len(events) != len(uniq(c.Events)) {
		errs = append(errs, &InvalidError{"events", "Choose the events the channel receives."})
	}
	c.Events = events
	if slices.Contains(events, EventAudit) && c.Kind != ChannelWebhook {
		errs = append(errs, &InvalidError{"events", "Only a signed webhook receives the audit log: its lines are for a SIEM, not a chat."})
	}
	c.SiteIDs = uniq(c.SiteIDs)
	for _, id := range c.SiteIDs {
		if !ValidUUID(id) {
			errs = append(errs, &InvalidError{"sites", "Choose sites from the list."})
			break
		}
	}
	return errors.Join(errs...)
}

func uniq(in []string) []string {
	out := []string{}
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its next attempt
	DeliveryDelivered = "delivered" // the receiver answered 2xx
	DeliveryFailed    = "failed"    // stopped: a 4xx other than 408/429, or 24 h of failures
)

// Delivery is one event sent, or to be sent, to one channel: the record the Notifications page
// shows. EventID is the X-SitePulse-Delivery id a receiver drops duplicates by.
type Delivery struct {
	ID         string
	ChannelID  string
	EventID    string
	EventType  string
	State      string
	Attempts   int
	NextAt     *time.Time
	LastStatus int
	LastError  string
	CreatedAt  time.Time
}

// ChannelDeliveriesShown is how many deliveries of a channel the page lists.
const ChannelDeliveriesShown = 50
