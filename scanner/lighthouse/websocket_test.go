package lighthouse

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// wsServer is the server end of RFC 6455 as far as the tests need: it completes the handshake
// and hands the raw connection to serve.
func wsServer(t *testing.T, serve func(conn net.Conn, br *bufio.Reader)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + wsGUID))
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "+
			base64.StdEncoding.EncodeToString(sum[:])+"\r\n\r\n")
		serve(conn, brw.Reader)
	}))
	t.Cleanup(srv.Close)
	return "ws://" + srv.Listener.Addr().String() + "/devtools/browser/x"
}

// serverFrame is a frame as a server sends it: unmasked.
func serverFrame(fin bool, opcode byte, payload []byte) []byte {
	b := []byte{opcode}
	if fin {
		b[0] |= 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n <= 0xFFFF:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// readClientFrame reads one frame from the client and unmasks it; masked is false when the
// client did not mask it.
func readClientFrame(br *bufio.Reader) (opcode byte, payload []byte, masked bool, err error) {
	var h [2]byte
	if _, err = io.ReadFull(br, h[:]); err != nil {
		return
	}
	opcode, masked = h[0]&0x0F, h[1]&0x80 != 0
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		io.ReadFull(br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	var mask [4]byte
	if masked {
		io.ReadFull(br, mask[:])
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(br, payload); err != nil {
		return
	}
	for i := range payload {
		payload[i] ^= mask[i%4]
	}
	return
}

// The client masks what it sends, joins fragments, answers a ping between them with its
// payload, reads the three length forms, and ends at the server's close.
func TestWebSocketClient(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 70_000) // a 64-bit length
	mid := bytes.Repeat([]byte("y"), 300)    // a 16-bit length
	pong := make(chan []byte, 1)
	url := wsServer(t, func(conn net.Conn, br *bufio.Reader) {
		op, got, masked, err := readClientFrame(br)
		if err != nil || op != wsText || !masked || string(got) != "hello" {
			t.Errorf("client frame: op %d %q masked %v err %v", op, got, masked, err)
		}
		conn.Write(serverFrame(false, wsText, []byte("frag")))
		conn.Write(serverFrame(true, wsPing, []byte("are you there")))
		conn.Write(serverFrame(true, wsContinuation, []byte("mented")))
		if op, p, masked, _ := readClientFrame(br); op == wsPong && masked {
			pong <- p
		}
		conn.Write(serverFrame(true, wsText, mid))
		conn.Write(serverFrame(true, wsBinary, big))
		conn.Write(serverFrame(true, wsClose, nil))
		readClientFrame(br) // the client's close
	})
	c, err := dialWS(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteText([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]byte{[]byte("fragmented"), mid, big} {
		got, err := c.ReadMessage()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("message = %d bytes %.20q, %v; want %d bytes %.20q", len(got), got, err, len(want), want)
		}
	}
	if got := <-pong; string(got) != "are you there" {
		t.Errorf("pong payload = %q", got)
	}
	if _, err := c.ReadMessage(); err != io.EOF {
		t.Errorf("after the server's close: %v, want io.EOF", err)
	}
}

// A server that masks its frames, or a handshake without the right accept, is refused; so is
// anything but a loopback ws:// address.
func TestWebSocketRefusals(t *testing.T) {
	masked := wsServer(t, func(conn net.Conn, br *bufio.Reader) {
		conn.Write([]byte{0x81, 0x81, 1, 2, 3, 4, 'a' ^ 1})
		io.Copy(io.Discard, br)
	})
	c, err := dialWS(context.Background(), masked)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadMessage(); err == nil || !strings.Contains(err.Error(), "masked") {
		t.Errorf("a masked server frame: %v", err)
	}
	c.Close()

	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := http.NewResponseController(w).Hijack()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: forged\r\n\r\n")
		conn.Close()
	}))
	defer wrong.Close()
	if _, err := dialWS(context.Background(), "ws://"+wrong.Listener.Addr().String()+"/"); err == nil || !strings.Contains(err.Error(), "Sec-WebSocket-Accept") {
		t.Errorf("a forged accept: %v", err)
	}
	for _, u := range []string{"ws://example.com:9222/devtools", "wss://127.0.0.1:9222/", "http://127.0.0.1:9222/"} {
		if _, err := dialWS(context.Background(), u); err == nil {
			t.Errorf("dialWS(%q) succeeded", u)
		}
	}
}

// Answers find their callers by id whatever their order, an event handler may call back
// while hundreds more events arrive (the reader never waits for the handler), and an error
// names the method, never its params.
func TestCDPClient(t *testing.T) {
	url := wsServer(t, func(conn net.Conn, br *bufio.Reader) {
		var calls []map[string]any
		for len(calls) < 3 {
			_, p, _, err := readClientFrame(br)
			if err != nil {
				return
			}
			var m map[string]any
			json.Unmarshal(p, &m)
			calls = append(calls, m)
			if m["method"] == "A.first" { // events before any answer, many of them
				for range 300 {
					conn.Write(serverFrame(true, wsText, []byte(`{"method":"E.happened","params":{"n":1}}`)))
				}
			}
		}
		for i := len(calls) - 1; i >= 0; i-- { // the answers in reverse order
			id := int(calls[i]["id"].(float64))
			answer := fmt.Sprintf(`{"id":%d,"result":{"v":%q}}`, id, calls[i]["method"])
			if calls[i]["method"] == "A.first" {
				answer = fmt.Sprintf(`{"id":%d,"error":{"code":-32000,"message":"Invalid parameters"}}`, id)
			}
			conn.Write(serverFrame(true, wsText, []byte(answer)))
		}
		io.Copy(io.Discard, br)
	})
	var events atomic.Int64
	handlerCalled := make(chan error, 1)
	eventSeen := make(chan struct{})
	var c *cdpClient
	c, err := dialCDP(context.Background(), url, func(method, _ string, _ json.RawMessage) {
		if events.Add(1) == 1 { // call back from the handler: the reader must go on meanwhile
			close(eventSeen)
			handlerCalled <- c.Call(context.Background(), "", "C.fromHandler", nil, nil)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		first <- c.Call(context.Background(), "", "A.first", map[string]string{"password": "hunter2"}, nil)
	}()
	<-eventSeen
	var got struct{ V string }
	if err := c.Call(context.Background(), "", "B.second", nil, &got); err != nil || got.V != "B.second" {
		t.Errorf("second call: %+v %v", got, err)
	}
	err = <-first
	if err == nil || !strings.Contains(err.Error(), "A.first") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("first call's error = %v: want the method named and no params", err)
	}
	if err := <-handlerCalled; err != nil {
		t.Errorf("a call from the event handler: %v", err)
	}
	c.Close()
	if n := events.Load(); n != 300 {
		t.Errorf("events handled = %d, want 300", n)
	}
}
