package securitylog

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"sitepulse/store"
)

// Line is one log line as the exports and the audit webhook write it. Field names are the
// JSON Lines keys and, in this order, the CSV columns.
type Line struct {
	Seq         int64             `json:"seq"`
	At          time.Time         `json:"at"`
	WorkspaceID string            `json:"workspaceId"`
	ActorID     string            `json:"actorId"`
	ActorEmail  string            `json:"actorEmail"`
	Kind        string            `json:"kind"`
	Target      string            `json:"target"`
	Details     map[string]string `json:"details"`
	IP          string            `json:"ip"`
	UserAgent   string            `json:"userAgent"`
}

// CSVHeader is the CSV export's header row.
var CSVHeader = []string{"seq", "at", "workspace_id", "actor_id", "actor_email", "kind", "target", "details", "ip", "user_agent"}

// LineOf is e as the exports write it.
func LineOf(e store.LogEvent) Line {
	d := e.Details
	if d == nil {
		d = map[string]string{}
	}
	return Line{Seq: e.Seq, At: e.At.UTC(), WorkspaceID: e.WorkspaceID, ActorID: e.ActorID, ActorEmail: e.ActorEmail,
		Kind: e.Kind, Target: e.Target, Details: d, IP: e.IP, UserAgent: e.UserAgent}
}

// Event is l as the store holds it.
func (l Line) Event() store.LogEvent {
	return store.LogEvent{Seq: l.Seq, At: l.At.UTC(), WorkspaceID: l.WorkspaceID, ActorID: l.ActorID, ActorEmail: l.ActorEmail,
		Kind: l.Kind, Target: l.Target, Details: l.Details, IP: l.IP, UserAgent: l.UserAgent}
}

// Writer writes lines in one format, buffered; Flush after the last (and whenever the reader
// should see what was written so far).
type Writer interface {
	Write(e store.LogEvent) error
	Flush() error
}

// Formats are the export formats by their ?format= name, with their content types.
var Formats = map[string]string{"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}

// NewWriter writes format ("csv" or "jsonl") to w; the CSV header goes out first.
func NewWriter(w io.Writer, format string) (Writer, error) {
	switch format {
	case "csv":
		c := csv.NewWriter(w)
		return &csvWriter{c: c}, c.Write(CSVHeader)
	case "jsonl":
		b := bufio.NewWriter(w)
		return &jsonlWriter{b: b, enc: json.NewEncoder(b)}, nil
	}
	return nil, fmt.Errorf("unknown export format %q: csv or jsonl", format)
}

type jsonlWriter struct {
	b   *bufio.Writer
	enc *json.Encoder
}

func (j *jsonlWriter) Write(e store.LogEvent) error { return j.enc.Encode(LineOf(e)) } // one line each
func (j *jsonlWriter) Flush() error                 { return j.b.Flush() }

type csvWriter struct{ c *csv.Writer }

func (c *csvWriter) Write(e store.LogEvent) error {
	l := LineOf(e)
	details, err := json.Marshal(l.Details)
	if err != nil {
		return err
	}
	row := []string{strconv.FormatInt(l.Seq, 10), l.At.Format(time.RFC3339Nano), l.WorkspaceID, l.ActorID, l.ActorEmail, l.Kind,
		l.Target, string(details), l.IP, l.UserAgent}
	for i := range row {
		row[i] = guardCell(row[i])
	}
	return c.c.Write(row)
}

func (c *csvWriter) Flush() error {
	c.c.Flush()
	return c.c.Error()
}

// guardCell prefixes with "'" a cell a spreadsheet would run as a formula (OWASP CSV
// Injection: =, +, -, @, tab, carriage return first) and a cell that starts with "'" itself, so
// that ReadCSV removes exactly one "'" from every cell that starts with one and reads back what
// was written.
func guardCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r'", rune(s[0])) {
		return "'" + s
	}
	return s
}

// ReadCSV reads a CSV export back: what a reviewer's tool, and the round-trip test, do.
func ReadCSV(r io.Reader) ([]store.LogEvent, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(CSVHeader, ",") {
		return nil, fmt.Errorf("not a security log export: header %v", rows)
	}
	out := []store.LogEvent{}
	for _, row := range rows[1:] {
		for i := range row {
			row[i] = strings.TrimPrefix(row[i], "'")
		}
		seq, err := strconv.ParseInt(row[0], 10, 64)
		if err != nil {
			return nil, err
		}
		at, err := time.Parse(time.RFC3339Nano, row[1])
		if err != nil {
			return nil, err
		}
		l := Line{Seq: seq, At: at, WorkspaceID: row[2], ActorID: row[3], ActorEmail: row[4], Kind: row[5], Target: row[6], IP: row[8], UserAgent: row[9]}
		if err := json.Unmarshal([]byte(row[7]), &l.Details); err != nil {
			return nil, err
		}
		out = append(out, l.Event())
	}
	return out, nil
}

// ReadJSONL reads a JSON Lines export back.
func ReadJSONL(r io.Reader) ([]store.LogEvent, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	out := []store.LogEvent{}
	for {
		var l Line
		err := dec.Decode(&l)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, l.Event())
	}
}
