package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"
)

// ServeCommand is the agent program's command that runs many nodes'
// tasks in one long-lived process (one per machine, for the local
// provider, whose nodes all live on the controller's machine): a node
// started there costs the fork of its phases' bash, not the start of a
// program of its own.
const ServeCommand = "serve"

// InstanceFlag carries an agent server's instance id on its command line,
// as InstanceFlag=ID; each node it runs records the id in its served file,
// so that the liveness check knows the server by more than its pid.
const InstanceFlag = "-instance"

// ServeRequest asks an agent server to run the task of one node, as
// `sortie-agent run` would: one JSON line on a fresh connection.
type ServeRequest struct {
	Dir      string   `json:"dir"`
	Env      []string `json:"env"`
	Notice   string   `json:"notice,omitempty"`
	Endpoint string   `json:"endpoint,omitempty"`
	Grace    string   `json:"grace,omitempty"`
}

// ServeReply is what the server says on that connection, a JSON line
// each: Started once the node's pid is recorded (or Ended at once when
// another agent had claimed the node), Ended when the task has ended and
// its exit code is written, Error when the request was refused.
type ServeReply struct {
	Started bool   `json:"started,omitempty"`
	Ended   bool   `json:"ended,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Server runs the nodes it is asked to on a listener.
type Server struct {
	// ID is the instance id the server's nodes record (InstanceFlag).
	ID string
	// Bash is the bash the phases run with.
	Bash string
	// Watch returns the preemption-notice watcher a request asks for
	// (nil: none), or why its settings are wrong.
	Watch func(req ServeRequest) (func(ctx context.Context, found func(Notice, bool)), error)
	// Idle is how long the server stays up with no node running and no
	// client connected; then it closes the listener and Serve returns.
	Idle time.Duration

	// Free hands the heap's unused memory back to the system
	// (debug.FreeOSMemory when nil): when the last node running ends, at
	// most once every FreeEvery (with nodes launched one after another
	// that is often), and on the first idle tick of closeWhenIdle
	// otherwise.
	Free func()
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	busy     int // connections being answered and nodes running
	last     time.Time
	closing  bool
	freed    bool // nothing was busy since the last Free
	lastFree time.Time
}

// FreeEvery is how often at most a server hands memory back as its last
// running node ends.
const FreeEvery = 250 * time.Millisecond

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Server) free() {
	if s.Free != nil {
		s.Free()
	} else {
		debug.FreeOSMemory()
	}
}

// Serve answers requests on ln until the server has been idle for Idle,
// then closes ln and returns once no node runs.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.last = s.now()
	s.mu.Unlock()
	stop := make(chan struct{})
	defer close(stop)
	go s.closeWhenIdle(ln, stop)
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if !s.begin() {
			conn.Close()
			continue
		}
		go s.answer(conn)
	}
}

// closeWhenIdle closes ln once nothing has been busy for Idle (tick).
func (s *Server) closeWhenIdle(ln net.Listener, stop <-chan struct{}) {
	t := time.NewTicker(max(s.Idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			if s.tick(now) {
				ln.Close()
				return
			}
		}
	}
}

// begin counts a connection as busy until done; false when the server is
// closing and takes no more.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.busy++
	s.freed = false
	return true
}

// tick is closeWhenIdle's look at the time now: it says whether to close,
// nothing having been busy for Idle. Before that, the first tick that
// finds nothing busy hands what the last burst of nodes took back to the
// system (Free), once per burst.
func (s *Server) tick(now time.Time) (closing bool) {
	s.mu.Lock()
	if s.busy == 0 && now.Sub(s.last) >= s.Idle {
		s.closing = true
		s.mu.Unlock()
		return true
	}
	free := s.busy == 0 && !s.freed
	if free {
		s.freed, s.lastFree = true, now
	}
	s.mu.Unlock()
	if free {
		s.free()
	}
	return false
}

// done ends what begin counted; the last one running hands memory back,
// unless that was done less than FreeEvery ago.
func (s *Server) done() {
	now := s.now()
	s.mu.Lock()
	s.busy--
	s.last = now
	free := s.busy == 0 && !s.freed && now.Sub(s.lastFree) >= FreeEvery
	if free {
		s.freed, s.lastFree = true, now
	}
	s.mu.Unlock()
	if free {
		s.free()
	}
}

// answer reads one request from conn, runs its node, and says so.
func (s *Server) answer(conn net.Conn) {
	defer s.done()
	defer conn.Close()
	reply := func(r ServeReply) {
		b, _ := json.Marshal(r)
		conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		conn.Write(append(b, '\n'))
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return
	}
	conn.SetReadDeadline(time.Time{})
	var req ServeRequest
	if err := json.Unmarshal(line, &req); err != nil {
		reply(ServeReply{Error: fmt.Sprintf("the request is not JSON: %v", err)})
		return
	}
	a, err := s.agent(req)
	if err != nil {
		reply(ServeReply{Error: err.Error()})
		return
	}
	started := false
	a.Ready = func() {
		started = true
		reply(ServeReply{Started: true})
	}
	if err := a.Run(context.Background()); err != nil {
		a.logLine("sortie: " + err.Error())
		if !started {
			reply(ServeReply{Error: err.Error()})
			return
		}
	}
	reply(ServeReply{Ended: true})
}

// agent is the Agent a request asks for.
func (s *Server) agent(req ServeRequest) (*Agent, error) {
	if !filepath.IsAbs(req.Dir) || filepath.Clean(req.Dir) != req.Dir {
		return nil, fmt.Errorf("the node directory %q is not a clean absolute path", req.Dir)
	}
	d, err := filepath.EvalSymlinks(req.Dir)
	if err != nil {
		return nil, fmt.Errorf("the node directory: %w", err)
	}
	grace := DefaultGrace
	if req.Grace != "" {
		if grace, err = time.ParseDuration(req.Grace); err != nil || grace <= 0 {
			return nil, fmt.Errorf("grace %q: not a positive duration such as 30s", req.Grace)
		}
	}
	a := &Agent{Dir: d, Bash: s.Bash, Env: req.Env, Grace: grace, Reap: true, Served: s.ID}
	if s.Watch != nil {
		w, err := s.Watch(req)
		if err != nil {
			return nil, err
		}
		a.Watch = w
	}
	return a, nil
}
