package storetest

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy between a SitePulse process and Postgres that simulates a database
// restart without touching the shared server: Cut drops every connection through it and
// refuses new ones, as a stopped Postgres does, and Restore listens again on the same address.
// Other tests on the same Postgres are not disturbed.
type Proxy struct {
	t      testing.TB
	target string // host:port of Postgres
	addr   string // 127.0.0.1:port the proxy listens on

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy proxies to the server of dsn; it closes when the test ends.
func NewProxy(t testing.TB, dsn string) *Proxy {
	t.Helper()
	target, err := hostPort(dsn)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &Proxy{t: t, target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(func() { p.Cut(); p.wg.Wait() })
	return p
}

// DSN is dsn pointed at the proxy.
func (p *Proxy) DSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Host = p.addr
		return u.String()
	}
	host, port, _ := net.SplitHostPort(p.addr)
	var kept []string
	for _, f := range strings.Fields(dsn) {
		if !strings.HasPrefix(f, "host=") && !strings.HasPrefix(f, "port=") {
			kept = append(kept, f)
		}
	}
	return strings.Join(append(kept, "host="+host, "port="+port), " ")
}

// Cut closes the listener and every proxied connection: clients see their connections reset
// and new ones refused until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore listens again on the proxy's address.
func (p *Proxy) Restore() {
	var ln net.Listener
	var err error
	for range 50 { // the port was just closed; it is ours again within moments
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Errorf("proxy: listen again on %s: %v", p.addr, err)
		return
	}
	p.serve(ln)
}

// Conns is how many connections are open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.pipe(ln, c)
			}()
		}
	}()
}

// pipe copies between client and Postgres until either side closes or the proxy is cut.
func (p *Proxy) pipe(ln net.Listener, client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.ln != ln { // cut meanwhile
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(server, client)
	go cp(client, server)
	<-done
	client.Close()
	server.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// hostPort finds host:port in a URL or key=value DSN.
func hostPort(dsn string) (string, error) {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		host, port := u.Hostname(), u.Port()
		if host == "" {
			host = "localhost"
		}
		if port == "" {
			port = "5432"
		}
		return net.JoinHostPort(host, port), nil
	}
	host, port := "localhost", "5432"
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "host="); ok {
			host = v
		}
		if v, ok := strings.CutPrefix(f, "port="); ok {
			port = v
		}
	}
	if strings.HasPrefix(host, "/") {
		return "", errors.New("DATABASE_URL uses a Unix socket; the fault tests need TCP")
	}
	return net.JoinHostPort(host, port), nil
}
