package integration

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lostReplyProxy is a TCP proxy in front of a redis-server that, once armed with a marker, lets
// the first request carrying it through and drops every answer of that connection from then on
// (the server ran the command; its client never hears so), closing the connection soon after:
// a connection lost between a write and its reply.
type lostReplyProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	marker []byte
	cuts   atomic.Int32
}

// startLostReplyProxy starts a proxy to the redis-server at url (redis://host:port) on a
// loopback port; it stops with the test.
func startLostReplyProxy(t *testing.T, url string) *lostReplyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &lostReplyProxy{target: strings.TrimPrefix(url, "redis://"), addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	return p
}

func (p *lostReplyProxy) arm(marker string) {
	p.mu.Lock()
	p.marker = []byte(marker)
	p.mu.Unlock()
}

// matches reports whether b carries the armed marker, and disarms it then.
func (p *lostReplyProxy) matches(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marker == nil || !bytes.Contains(b, p.marker) {
		return false
	}
	p.marker = nil
	return true
}

func (p *lostReplyProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	var dropped atomic.Bool
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 && !dropped.Load() {
				c.Write(buf[:n])
			}
			if err != nil {
				c.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if p.matches(buf[:n]) {
				dropped.Store(true)
				p.cuts.Add(1)
				time.AfterFunc(300*time.Millisecond, func() { c.Close(); s.Close() })
			}
			s.Write(buf[:n])
		}
		if err != nil {
			s.Close()
			return
		}
	}
}
