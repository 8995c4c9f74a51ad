package lighthouse

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// wsConn is the client end of a WebSocket (RFC 6455), as small as talking to Chrome's DevTools
// endpoint on loopback needs: text messages, fragmented or not, pings answered, no extensions.
// Reads happen on one goroutine; writes are serialised.
type wsConn struct {
	conn net.Conn
	br   *bufio.Reader
	wmu  sync.Mutex
}

// wsGUID is the constant of the opening handshake (RFC 6455 §1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// maxWSMessage caps one message read (a DevTools event or answer).
const maxWSMessage = 32 << 20

// dialWS opens a WebSocket to a ws:// URL on a loopback address: Chrome's DevTools endpoint.
func dialWS(ctx context.Context, rawURL string) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "ws" || u.Host == "" {
		return nil, fmt.Errorf("DevTools: %q is not a ws:// URL", rawURL)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("DevTools: %s is not a loopback address", u.Host)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("DevTools: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	raw := make([]byte, 16)
	rand.Read(raw)
	key := base64.StdEncoding.EncodeToString(raw)
	path := u.RequestURI()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, fmt.Errorf("DevTools: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("DevTools: handshake: %w", err)
	}
	resp.Body.Close()
	sum := sha1.Sum([]byte(key + wsGUID))
	switch {
	case resp.StatusCode != http.StatusSwitchingProtocols:
		err = fmt.Errorf("DevTools: handshake answered %s", resp.Status)
	case !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket"):
		err = errors.New("DevTools: handshake: no Upgrade: websocket")
	case resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]):
		err = errors.New("DevTools: handshake: wrong Sec-WebSocket-Accept")
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return &wsConn{conn: conn, br: br}, nil
}

// WebSocket opcodes (RFC 6455 §5.2).
const (
	wsContinuation = 0x0
	wsText         = 0x1
	wsBinary       = 0x2
	wsClose        = 0x8
	wsPing         = 0x9
	wsPong         = 0xA
)

// writeFrame sends one final frame, masked as a client must (RFC 6455 §5.3).
func (c *wsConn) writeFrame(opcode byte, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	hdr := make([]byte, 0, 14)
	hdr = append(hdr, 0x80|opcode)
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	_, err := c.conn.Write(append(hdr, masked...))
	return err
}

// WriteText sends one text message.
func (c *wsConn) WriteText(p []byte) error { return c.writeFrame(wsText, p) }

// ReadMessage answers the next text or binary message, joining its fragments, answering pings
// on the way; io.EOF once the peer closed.
func (c *wsConn) ReadMessage() ([]byte, error) {
	var msg []byte
	inMessage := false
	for {
		var h [2]byte
		if _, err := io.ReadFull(c.br, h[:]); err != nil {
			return nil, err
		}
		fin, opcode := h[0]&0x80 != 0, h[0]&0x0F
		if h[0]&0x70 != 0 {
			return nil, errors.New("DevTools: WebSocket frame with reserved bits (no extension was agreed)")
		}
		if h[1]&0x80 != 0 {
			return nil, errors.New("DevTools: masked WebSocket frame from the server")
		}
		n := uint64(h[1] & 0x7F)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(c.br, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(c.br, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if opcode >= wsClose && (n > 125 || !fin) {
			return nil, errors.New("DevTools: malformed WebSocket control frame")
		}
		if n > maxWSMessage || uint64(len(msg))+n > maxWSMessage {
			return nil, fmt.Errorf("DevTools: WebSocket message larger than %d MiB", maxWSMessage>>20)
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(c.br, payload); err != nil {
			return nil, err
		}
		switch opcode {
		case wsPing:
			if err := c.writeFrame(wsPong, payload); err != nil {
				return nil, err
			}
		case wsPong:
		case wsClose:
			c.writeFrame(wsClose, nil)
			return nil, io.EOF
		case wsText, wsBinary:
			if inMessage {
				return nil, errors.New("DevTools: new WebSocket message inside a fragmented one")
			}
			msg, inMessage = payload, true
		case wsContinuation:
			if !inMessage {
				return nil, errors.New("DevTools: WebSocket continuation without a message")
			}
			msg = append(msg, payload...)
		default:
			return nil, fmt.Errorf("DevTools: unknown WebSocket opcode %d", opcode)
		}
		if inMessage && fin && opcode < wsClose {
			return msg, nil
		}
	}
}

// Close sends a close frame and closes the connection.
func (c *wsConn) Close() error {
	c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	c.writeFrame(wsClose, []byte{0x03, 0xE8}) // 1000: normal closure
	return c.conn.Close()
}
