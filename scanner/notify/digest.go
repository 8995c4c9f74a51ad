// Package notify sends what a scan tells its owner: the digest e-mail after a scan completes,
// a job of kind KindDigest that the scan's completion enqueues in its own transaction.
package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// KindDigest is the kind of the digest's jobs.
const KindDigest = "digest"

// DigestJob is the args of the job that sends the digest of a completed scan. To is empty for the
// job the scan's completion enqueues; it fans out into one job per recipient (To set), so a retry
// after a failed send reaches only the member it failed for, never the ones already mailed.
type DigestJob struct {
	ScanID string `json:"scanId"`
	To     string `json:"to,omitempty"`
}

// Kind is KindDigest.
func (DigestJob) Kind() string { return KindDigest }

// MaxAttempts lets a digest outlast an SMTP outage: with the pool's backoff (attempt^4 s) its 10
// attempts span about 4 hours.
func (DigestJob) MaxAttempts() int { return 10 }

// AfterScan is the follow-up jobs of a completed scan: its digest and the planning of its alerts.
func AfterScan(scanID string) []store.JobArgs {
	return []store.JobArgs{DigestJob{ScanID: scanID}, AlertsJob{ScanID: scanID}}
}

// DigestStore is what the digest reads: the scan and its site, its runs and the previous
// completed scan's (with what explains them), the members of the site's workspace; and where it enqueues a job per recipient.
type DigestStore interface {
	ScanForJob(ctx context.Context, scanID string) (store.Scan, store.Site, error)
	PreviousPairs(ctx context.Context, userID, scanID string) (store.ScanPairs, error)
	UserByID(ctx context.Context, id string) (store.User, error)
	Members(ctx context.Context, workspaceID string) ([]store.Member, error)
	EnqueueJob(ctx context.Context, args store.JobArgs, runAt time.Time) (store.Job, error)
	PublishesOfScans(ctx context.Context, userID string, scanIDs []string) (map[string]store.Publish, error)
}

// Digest e-mails the regressions of a completed scan against the previous completed one to
// every member of the site's workspace who has regression e-mails on for it (a per-member
// setting): one message per member per completed scan, only when there are regressions. Without
// an SMTP address the message is logged instead. A failing SMTP server is logged and never fails
// the scan: the recipient's job is retried with backoff, on any process.
type Digest struct {
	Store DigestStore
	// SMTPAddr is host:port (SMTP_ADDR); empty logs digests instead of sending them.
	SMTPAddr           string
	From               string // SMTP_FROM, e.g. "SitePulse <sitepulse@example.com>"
	Username, Password string // PLAIN auth when Username is set
	BaseURL            string // for the link to the site in the message
	Timeout            time.Duration
	Log                *slog.Logger
	Now                func() time.Time
	// Field is the sites' field data: the digest says what real users measured of the
	// regressions of a publish (field.go); nil: it says nothing of the field.
	Field FieldSource
}

// Work is the worker of the digest's jobs: it finds the regressions of a completed scan and
// sends or logs the digest. An error (the store, the SMTP server) retries the job; a scan
// deleted meanwhile has nothing left to say.
func (d *Digest) Work(ctx context.Context, _ store.Job, args DigestJob) error {
	scanID := args.ScanID
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	scan, site, err := d.Store.ScanForJob(ctx, scanID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("digest: read the scan: %w", err)
	}
	log = log.With("site", site.Name, "scan", scanID)
	members, err := d.Store.Members(ctx, site.WorkspaceID)
	if err != nil {
		return fmt.Errorf("digest: read the members: %w", err)
	}
	// The scans are read as a member: whoever added the site may have left the workspace.
	reader := site.UserID
	if len(members) > 0 {
		reader = members[0].UserID
	}
	// The previous scan is the one completed just before this one, even when the job runs late
	// and a newer scan has completed since; both sides' runs carry what explains them.
	pairs, err := d.Store.PreviousPairs(ctx, reader, scanID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("digest: read the scans: %w", err)
	}
	if pairs.From == nil {
		return nil // the site's first scan: nothing to compare with
	}
	changes := analysis.RegressedChanges(pairs.Pairs)
	if len(changes) == 0 {
		return nil
	}
	regs := 0
	for _, c := range changes {
		regs += len(c.Regressions)
	}
	var to []string
	for _, m := range members {
		if m.NotifyRegressions && (args.To == "" || args.To == m.Email) {
			to = append(to, m.Email)
		}
	}
	if len(members) == 0 { // a site outside any workspace (tests, older callers): its owner's setting
		owner, err := d.Store.UserByID(ctx, site.UserID)
		if err != nil {
			return fmt.Errorf("digest: read the owner: %w", err)
		}
		if owner.NotifyRegressions && (args.To == "" || args.To == owner.Email) {
			to = append(to, owner.Email)
		}
	}
	if len(to) == 0 {
		log.Info("digest: regressions found; no member to tell (notifications off, or the member left)", "regressions", regs)
		return nil
	}
	if args.To == "" && len(to) > 1 {
		// One job per recipient, so a failed send is retried for that member alone.
		for _, addr := range to {
			if _, err := d.Store.EnqueueJob(ctx, DigestJob{ScanID: scanID, To: addr}, time.Now()); err != nil {
				return fmt.Errorf("digest: enqueue a recipient's digest: %w", err)
			}
		}
		return nil
	}
	addr := to[0]
	subject, body := d.compose(site, scanID, pairs.From.ID, changes)
	if d.Field != nil {
		// What real users measured of the regressions, when a publish started the scan.
		o := Outcome{Site: site, Scan: scan}
		for _, p := range pairs.Pairs {
			o.Previous, o.Latest = append(o.Previous, p.Before), append(o.Latest, p.After)
		}
		pubs, err := d.Store.PublishesOfScans(ctx, reader, []string{scanID})
		if err != nil {
			return fmt.Errorf("digest: read the publish: %w", err)
		}
		if p, ok := pubs[scanID]; ok {
			o.Publish = &p
		}
		if err := fieldOutcome(ctx, d.Field, &o, time.Time{}, now()); err != nil {
			return fmt.Errorf("digest: read the field: %w", err)
		}
		body = withField(body, o)
	}
	if d.SMTPAddr == "" {
		log.Info("digest (SMTP_ADDR not set, so logged instead of sent)", "to", addr, "subject", subject, "body", body)
		return nil
	}
	if err := d.send(ctx, addr, subject, body); err != nil {
		log.Warn("digest: sending failed; the scan is complete regardless and the digest is retried", "to", addr, "smtp", d.SMTPAddr, "err", err)
		return fmt.Errorf("digest: send: %w", err)
	}
	log.Info("digest sent", "to", addr, "regressions", regs)
	return nil
}

// compose writes the digest: one line per regression with page, strategy, metric, from and to,
// then what changed on each regressed page, in one sentence (analysis.PageChange.Sentence),
// saying how sure it is when it is not (analysis.Hedge).
func (d *Digest) compose(site store.Site, scanID, previousID string, changes []analysis.PageChange) (subject, body string) {
	n := 0
	for _, c := range changes {
		n += len(c.Regressions)
	}
	noun := plural(n, "regression", "regressions")
	subject = fmt.Sprintf("SitePulse: %d %s on %s", n, noun, oneLine(site.Name))
	var b strings.Builder
	fmt.Fprintf(&b, "The latest scan of %s (%s) found %d %s against the previous scan.\n\n", oneLine(site.Name), oneLine(site.Domain), n, noun)
	fmt.Fprintf(&b, "%-28s %-8s %-14s %10s %10s\n", "Page", "Strategy", "Metric", "From", "To")
	for _, c := range changes {
		for _, r := range c.Regressions {
			fmt.Fprintf(&b, "%-28s %-8s %-14s %10s %10s\n", oneLine(r.PagePath), r.Strategy, r.Metric, FmtMetric(r.Metric, r.From), FmtMetric(r.Metric, r.To))
		}
	}
	b.WriteString("\nWhat changed:\n")
	for _, c := range changes {
		sure := ""
		if main, ok := c.Main(); ok && analysis.Hedge(main.Confidence) != "" {
			sure = ", " + analysis.Hedge(main.Confidence)
		}
		fmt.Fprintf(&b, "\n%s (%s)%s: %s\n", oneLine(c.PagePath), c.Strategy, sure, oneLine(c.Sentence()))
	}
	fmt.Fprintf(&b, "\nScan %s, compared with scan %s.\n", scanID, previousID)
	if d.BaseURL != "" {
		fmt.Fprintf(&b, "Site: %s/sites/%s\n", strings.TrimRight(d.BaseURL, "/"), site.ID)
	}
	b.WriteString("\nYou get this e-mail because regression e-mails are on for this workspace in SitePulse.\n")
	return subject, b.String()
}

// withField adds to a digest what real users measured: the field status of its regressions and
// the field-only regressions of its pages, before its closing lines; the body as it was when the
// field says nothing.
func withField(body string, o Outcome) string {
	var lines []string
	for _, f := range o.Field {
		lines = append(lines, fmt.Sprintf("%s (%s, %s): %s", analysis.Label(f.Metric), f.Device, f.Source, oneLine(f.Text)))
	}
	for _, r := range o.FieldOnly {
		lines = append(lines, "Field-only: "+oneLine(r.Text))
	}
	if len(lines) == 0 {
		return body
	}
	at := strings.Index(body, "\nScan ")
	if at < 0 {
		at = len(body)
	}
	return body[:at] + "\nWhat real users measured:\n  " + strings.Join(lines, "\n  ") + "\n" + body[at:]
}

// FmtMetric shows a value with its unit: scores as integers, CLS with decimals, vitals in ms.
func FmtMetric(metric string, v float64) string {
	m, _ := analysis.Lookup(metric)
	switch {
	case m.Kind == analysis.Vital && m.Unit == "":
		return strconv.FormatFloat(v, 'f', 3, 64)
	case m.Unit == "ms":
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

// oneLine keeps user text from breaking out of a header or a table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// send delivers one message through net/smtp, bounded by Timeout. It uses STARTTLS when the
// server offers it and PLAIN auth when a user name is configured.
func (d *Digest) send(ctx context.Context, to, subject, body string) error {
	from, err := mail.ParseAddress(d.From)
	if err != nil {
		return fmt.Errorf("SMTP_FROM %q: %w", d.From, err)
	}
	rcpt, err := mail.ParseAddress(to)
	if err != nil {
		return fmt.Errorf("recipient: %w", err)
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dialer := net.Dialer{Timeout: timeout}
	conn, err := dialer.DialContext(ctx, "tcp", d.SMTPAddr)
	if err != nil {
		return err
	}
	conn.SetDeadline(time.Now().Add(timeout))
	host, _, _ := net.SplitHostPort(d.SMTPAddr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: host}); err != nil {
			return err
		}
	}
	if d.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", d.Username, d.Password, host)); err != nil {
			return err
		}
	}
	if err := c.Mail(from.Address); err != nil {
		return err
	}
	if err := c.Rcpt(rcpt.Address); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	headers := []string{
		"From: " + from.String(),
		"To: " + rcpt.String(),
		"Subject: " + mime.QEncoding.Encode("utf-8", subject),
		"Date: " + now().Format(time.RFC1123Z),
		"MIME-Version: 1.0",
		"Content-Type: text/plain; charset=utf-8",
		"Content-Transfer-Encoding: 8bit",
	}
	msg := strings.Join(headers, "\r\n") + "\r\n\r\n" + strings.ReplaceAll(body, "\n", "\r\n")
	if _, err := w.Write([]byte(msg)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// Send delivers one message with the digest's SMTP settings; sign-up messages and workspace
// invitations use it too.
func (d *Digest) Send(ctx context.Context, to, subject, body string) error {
	return d.send(ctx, to, subject, body)
}
