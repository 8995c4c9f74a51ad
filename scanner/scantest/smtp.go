package scantest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
)

// SMTPMessage is one message an SMTP double received.
type SMTPMessage struct{ From, To, Data string }

// SMTP is a tiny SMTP server on 127.0.0.1 that records what it is sent. A broken one
// refuses every message after the greeting.
type SMTP struct {
	Addr string
	mu   sync.Mutex
	msgs []SMTPMessage
}

// NewSMTP starts an SMTP double until the test ends.
func NewSMTP(t testing.TB, broken bool) *SMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &SMTP{Addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go f.session(conn, broken)
		}
	}()
	return f
}

func (f *SMTP) session(conn net.Conn, broken bool) {
	defer conn.Close()
	rd := bufio.NewReader(conn)
	say := func(s string) { conn.Write([]byte(s + "\r\n")) }
	say("220 fake ESMTP")
	var m SMTPMessage
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250 fake")
		case broken && strings.HasPrefix(cmd, "MAIL"):
			say("554 5.7.1 relay refused")
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			m.From = strings.Trim(strings.TrimSpace(line)[10:], "<>")
			say("250 ok")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			m.To = strings.Trim(strings.TrimSpace(line)[8:], "<>")
			say("250 ok")
		case cmd == "DATA":
			say("354 go on")
			var b strings.Builder
			for {
				l, err := rd.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			m.Data = b.String()
			f.mu.Lock()
			f.msgs = append(f.msgs, m)
			f.mu.Unlock()
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

// Messages lists the messages received so far.
func (f *SMTP) Messages() []SMTPMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]SMTPMessage(nil), f.msgs...)
}
