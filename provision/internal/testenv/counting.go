package testenv

import (
	"io"
	"net"
	"sync"
	"time"
)

// CountingProxy is a TCP proxy in front of a server (the tests' sshd) that
// counts the connections made through it, as seen from outside the
// client: for an SSH server, each is one handshake. It can drop every live
// connection (a network blip) and refuse new ones (a node unreachable).
type CountingProxy struct {
	l      net.Listener
	target string

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when live changes
	accepted int
	refuse   bool
	live     map[net.Conn]net.Conn // client side -> server side
	silent   map[net.Conn]bool     // connections Silence cut, either side
	wg       sync.WaitGroup
}

// ServeCountingProxy listens on 127.0.0.1 and forwards each connection to
// target until Close.
func ServeCountingProxy(target string) (*CountingProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &CountingProxy{l: l, target: target, live: map[net.Conn]net.Conn{}, silent: map[net.Conn]bool{}, changed: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// StartCountingProxy is ServeCountingProxy closed on cleanup.
func StartCountingProxy(t TB, target string) *CountingProxy {
	t.Helper()
	p, err := ServeCountingProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Addr is 127.0.0.1:PORT.
func (p *CountingProxy) Addr() string { return p.l.Addr().String() }

// Port is the port it listens on.
func (p *CountingProxy) Port() int { return p.l.Addr().(*net.TCPAddr).Port }

func (p *CountingProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.refuse {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.accepted++
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.live[c] = up
		p.signal()
		p.mu.Unlock()
		p.wg.Add(1)
		go p.pipe(c, up)
	}
}

func (p *CountingProxy) pipe(c, up net.Conn) {
	defer p.wg.Done()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, p.silenced(c)); up.Close(); done <- struct{}{} }()
	go func() { io.Copy(c, p.silenced(up)); c.Close(); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.live, c)
	delete(p.silent, c)
	delete(p.silent, up)
	p.signal()
	p.mu.Unlock()
}

// signal wakes WaitLive; p.mu is held.
func (p *CountingProxy) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Accepted is how many connections were made through the proxy.
func (p *CountingProxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Live is how many connections through the proxy are open.
func (p *CountingProxy) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

// WaitLive waits until n connections are open, for at most d, and says
// whether that happened.
func (p *CountingProxy) WaitLive(n int, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		live, changed := len(p.live), p.changed
		p.mu.Unlock()
		if live == n {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// DropAll closes every open connection, as a network blip would.
func (p *CountingProxy) DropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, up := range p.live {
		c.Close()
		up.Close()
	}
}

// Silence makes every open connection drop what it carries from now on,
// without closing: a peer that went silent, as behind a NAT that forgot
// the connection. New connections are not affected.
func (p *CountingProxy) Silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, up := range p.live {
		p.silent[c], p.silent[up] = true, true
	}
}

// silenced reads from src, discarding what it reads once Silence has cut
// src's connection.
func (p *CountingProxy) silenced(src net.Conn) io.Reader {
	return readerFunc(func(b []byte) (int, error) {
		for {
			n, err := src.Read(b)
			p.mu.Lock()
			cut := p.silent[src]
			p.mu.Unlock()
			if !cut || err != nil {
				return n, err
			}
		}
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

// Refuse makes the proxy close new connections at once (on) or forward
// them again (off).
func (p *CountingProxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Close stops listening, closes every connection and waits for its
// goroutines.
func (p *CountingProxy) Close() {
	p.l.Close()
	p.DropAll()
	p.wg.Wait()
}
