package testutil

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server, counts the bytes its clients send, and can
// drop every connection once a number of bytes went through, or hold them there: a
// transfer interrupted for real, in the middle, at a byte count the test chooses.
type Proxy struct {
	// URL is http://<the proxy's address>.
	URL    string
	target string

	mu      sync.Mutex
	conns   map[net.Conn]bool
	sent    int64         // bytes clients sent through, over every connection
	limit   int64         // when > 0, no byte past this count goes through
	stall   bool          // at the limit, hold the connections instead of dropping them
	refuse  bool          // at the limit, and after it until Allow, close new connections at once
	cut     bool          // the limit was reached and the proxy refuses connections
	release chan struct{} // closed by Cut: stalled connections end
}

// NewProxy starts a proxy to the server at targetURL (http://host:port) until the test
// ends.
func NewProxy(t testing.TB, targetURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(targetURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), target: u.Host, conns: map[net.Conn]bool{}, release: make(chan struct{})}
	go p.accept(ln)
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

// Sent is the number of bytes clients sent through the proxy so far.
func (p *Proxy) Sent() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

// CutAt drops every connection once clients sent n bytes in all (counted from the
// proxy's start), after exactly n. With refuse, later connections are closed at once
// too, until Allow; without, they go through with no limit.
func (p *Proxy) CutAt(n int64, refuse bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit, p.stall, p.refuse, p.cut = n, false, refuse, false
}

// StallAt holds every connection once clients sent n bytes in all: nothing more goes
// through, and nothing is closed, until Cut.
func (p *Proxy) StallAt(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit, p.stall, p.refuse, p.cut = n, true, true, false
}

// Cut drops every open connection now, stalled ones included.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropAll()
}

// Allow lets every connection through again, with no limit.
func (p *Proxy) Allow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit, p.stall, p.refuse, p.cut = 0, false, false, false
}

// dropAll closes every connection and ends stalled ones. p.mu is held.
func (p *Proxy) dropAll() {
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	close(p.release)
	p.release = make(chan struct{})
}

func (p *Proxy) accept(ln net.Listener) {
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refused := p.cut
		p.mu.Unlock()
		if refused {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns[client], p.conns[server] = true, true
		p.mu.Unlock()
		go func() {
			p.forward(server, client)
			client.Close()
			server.Close()
		}()
		go func() {
			io.Copy(client, server)
			client.Close()
			server.Close()
		}()
	}
}

// forward copies what the client sends to the server, counting it, up to the limit.
func (p *Proxy) forward(server, client net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			data := buf[:n]
			p.mu.Lock()
			atLimit := p.limit > 0 && p.sent+int64(n) >= p.limit
			if atLimit {
				data = data[:max(0, p.limit-p.sent)]
			}
			p.sent += int64(len(data))
			stall, release := p.stall, p.release
			p.mu.Unlock()
			if len(data) > 0 {
				if _, err := server.Write(data); err != nil {
					return
				}
			}
			if atLimit {
				p.mu.Lock()
				p.cut = p.refuse
				if !stall {
					p.limit = 0
					if p.refuse {
						p.limit = p.sent // nothing more through until Allow
					}
					p.dropAll()
				}
				p.mu.Unlock()
				<-release
				return
			}
		}
		if err != nil {
			return
		}
	}
}
