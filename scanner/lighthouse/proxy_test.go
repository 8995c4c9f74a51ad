package lighthouse

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"sitepulse/scanner/netguard"
)

// publicAndInternal starts two loopback servers: "public", which the returned dial lets
// through as if it were a public address (a test-only allow rule for its one port), and
// "internal", which the guard refuses like any loopback address, with its hit count.
func publicAndInternal(t *testing.T, public http.Handler) (pub, internal *httptest.Server, hits *atomic.Int64, dial func(ctx context.Context, network, address string) (net.Conn, error)) {
	t.Helper()
	hits = &atomic.Int64{}
	internal = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "<h1>internal admin</h1>")
	}))
	t.Cleanup(internal.Close)
	pub = httptest.NewServer(public)
	t.Cleanup(pub.Close)
	allowed := pub.Listener.Addr().String()
	dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		if address == allowed {
			return netguard.Guard{AllowPrivate: true}.DialContext(ctx, network, address)
		}
		return netguard.Guard{}.DialContext(ctx, network, address)
	}
	return pub, internal, hits, dial
}

// proxiedClient is an HTTP client that sends everything through the proxy, as Chrome does
// with --proxy-server, and follows redirects itself, as Chrome does.
func proxiedClient(p *ChromeProxy) *http.Client {
	u, _ := url.Parse(p.URL())
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
}

func TestChromeProxyRefusesWhatTheGuardRefuses(t *testing.T) {
	var pub *httptest.Server
	var internalURL string
	pub, internal, hits, dial := publicAndInternal(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, internalURL+"/admin", http.StatusFound)
		default:
			io.WriteString(w, "public page")
		}
	}))
	internalURL = internal.URL
	p, err := StartChromeProxy(dial, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := proxiedClient(p)

	t.Run("a plain GET of an allowed page is proxied", func(t *testing.T) {
		resp, err := c.Get(pub.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "public page" {
			t.Errorf("GET = %d %q, want 200 \"public page\"", resp.StatusCode, body)
		}
	})
	t.Run("a plain GET of a loopback address is refused with 403", func(t *testing.T) {
		resp, err := c.Get(internal.URL + "/admin")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("status = %d, want 403", resp.StatusCode)
		}
	})
	t.Run("a redirect to a loopback address is refused at its own hop", func(t *testing.T) {
		resp, err := c.Get(pub.URL + "/redirect")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Request.URL.String() != internal.URL+"/admin" {
			t.Errorf("status = %d at %s, want 403 at the redirect's target", resp.StatusCode, resp.Request.URL)
		}
	})
	t.Run("CONNECT to an allowed address is tunnelled", func(t *testing.T) {
		status, reply := connect(t, p, pub.Listener.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(status, "HTTP/1.1 200") || !strings.HasSuffix(reply, "public page") {
			t.Errorf("CONNECT = %q, then %q; want 200 and the page through the tunnel", status, reply)
		}
	})
	for _, target := range []string{internal.Listener.Addr().String(), "169.254.169.254:80", "[::1]:443", "10.0.0.1:443"} {
		t.Run("CONNECT to "+target+" is refused with 403", func(t *testing.T) {
			if status, _ := connect(t, p, target, ""); !strings.HasPrefix(status, "HTTP/1.1 403") {
				t.Errorf("CONNECT = %q, want 403", status)
			}
		})
	}
	t.Run("a request that is not for a proxy is a 400", func(t *testing.T) {
		resp, err := http.Get(p.URL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status = %d, want 400", resp.StatusCode)
		}
	})
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal service received %d requests, want 0", n)
	}
	if n := p.Refused(); n < 6 {
		t.Errorf("Refused() = %d, want every refusal counted (6 or more)", n)
	}
}

// connect sends CONNECT target through the proxy, then send through the tunnel, and answers
// the status line and what came back.
func connect(t *testing.T, p *ChromeProxy, target, send string) (status, reply string) {
	t.Helper()
	u, _ := url.Parse(p.URL())
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	status = "HTTP/1.1 " + resp.Status
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return status, ""
	}
	io.WriteString(conn, send)
	b, err := io.ReadAll(br)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return status, string(b)
}
