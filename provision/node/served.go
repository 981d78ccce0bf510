package node

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"sortie/provision/node/agent"
)

type agentServerKey struct{}

// WithAgentServer returns ctx that makes a Start on this machine
// (StartHere) run the node's task in the agent server listening on the
// unix socket sock (sortie-agent serve), started when none answers there,
// instead of in an agent program of its own: one long-lived process runs
// every local node's phases, and a node costs its phases' bash, not the
// start of a Go program. When no server can be had (a socket path too long
// for the system, a server that will not start), the node gets an agent
// of its own, as before.
func WithAgentServer(ctx context.Context, sock string) context.Context {
	return context.WithValue(ctx, agentServerKey{}, sock)
}

// servable says whether a start with ctx asks an agent server first: ctx
// names one, on a socket path the system can listen on.
func servable(ctx context.Context) bool {
	sock, _ := ctx.Value(agentServerKey{}).(string)
	return sock != "" && len(sock) <= maxSocketPath
}

// maxSocketPath is what a unix socket's path may hold (sun_path, less
// its terminating zero).
const maxSocketPath = 107

// serverStartMu keeps this process from starting two servers at once.
var serverStartMu sync.Mutex

// startServed asks the agent server on sock to run node directory d's
// task. handled is false, with nothing begun, when no server could be
// reached: the caller then starts an agent of the node's own. Once a
// server was asked, the node is its own or no one's.
func startServed(ctx context.Context, prog, sock, d string, env []string, vars map[string]string) (handled bool, err error) {
	if len(sock) > maxSocketPath {
		return false, nil
	}
	req := agent.ServeRequest{Dir: d, Env: append(env[:len(env):len(env)], "PWD="+d), Notice: vars["NOTICE"], Endpoint: vars["ENDPOINT"], Grace: vars["GRACE"]}
	line, err := json.Marshal(req)
	if err != nil {
		return true, err
	}
	line = append(line, '\n')
	exited, _ := ctx.Value(agentExitKey{}).(func())
	asked := false
	for try := 0; try < 3; try++ {
		conn, err := net.DialTimeout("unix", sock, time.Second)
		if err != nil {
			if err := startServer(ctx, prog, sock, env); err != nil {
				break
			}
			continue
		}
		asked = true
		reply, r, err := askServer(ctx, conn, line)
		if err != nil {
			// The server went as this came (idle, or killed): the node
			// was not begun unless its files say so.
			conn.Close()
			if claimed(d) {
				return true, nil
			}
			continue
		}
		if reply.Error != "" {
			conn.Close()
			return true, fmt.Errorf("the agent server refused the node: %s", reply.Error)
		}
		if reply.Started {
			// Told when the task ends, while this process lives (as
			// WithAgentExit promises), or when the server goes.
			done := running.add(d)
			go func() {
				defer conn.Close()
				defer running.end(d, done)
				for {
					l, err := r.ReadBytes('\n')
					var rep agent.ServeReply
					if err != nil || (json.Unmarshal(l, &rep) == nil && rep.Ended) {
						break
					}
				}
				if exited != nil {
					exited()
				}
			}()
		} else {
			conn.Close()
			if exited != nil {
				exited()
			}
		}
		if claimed(d) {
			return true, nil
		}
		return true, fmt.Errorf("the node agent wrote no pid file; see %s", d)
	}
	if asked {
		// A server that had the request may yet claim the node: an
		// agent of the node's own, which claims it by another file
		// (begun, not served), must not run it too.
		return true, fmt.Errorf("the agent server on %s did not answer for the node; see %s", sock, d)
	}
	return false, nil
}

// running is the nodes an agent server runs for this process: each one's
// channel is closed once the server is done with it (its Ended reply, or
// the connection's end), when it holds no lock on the node any more.
var running = servedNodes{m: map[string]chan struct{}{}}

type servedNodes struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (r *servedNodes) add(d string) chan struct{} {
	ch := make(chan struct{})
	r.mu.Lock()
	r.m[d] = ch
	r.mu.Unlock()
	return ch
}

func (r *servedNodes) end(d string, ch chan struct{}) {
	r.mu.Lock()
	if r.m[d] == ch {
		delete(r.m, d)
	}
	r.mu.Unlock()
	close(ch)
}

// ServedHere returns a channel closed once the agent server this process
// asked to run node directory dir (as StartHere resolved it) is done with
// it; ok is false when this process asked for no such node, or the server
// is done already.
func ServedHere(dir string) (done <-chan struct{}, ok bool) {
	running.mu.Lock()
	defer running.mu.Unlock()
	ch, ok := running.m[dir]
	return ch, ok
}

// askServer sends a request line on conn and reads the first reply, by
// ctx's deadline or within 5s.
func askServer(ctx context.Context, conn net.Conn, line []byte) (agent.ServeReply, *bufio.Reader, error) {
	conn.SetDeadline(startDeadline(ctx))
	var rep agent.ServeReply
	if _, err := conn.Write(line); err != nil {
		return rep, nil, err
	}
	r := bufio.NewReader(conn)
	l, err := r.ReadBytes('\n')
	if err != nil {
		return rep, nil, err
	}
	conn.SetDeadline(time.Time{})
	if err := json.Unmarshal(l, &rep); err != nil {
		return rep, nil, fmt.Errorf("the agent server's reply: %w", err)
	}
	return rep, r, nil
}

// startServer starts an agent server on sock, detached, and returns once
// it listens (or found another server holding the socket and left). The
// server is this process's child: it is reaped when it exits while this
// process lives.
func startServer(ctx context.Context, prog, sock string, env []string) error {
	serverStartMu.Lock()
	defer serverStartMu.Unlock()
	// Another start of this process's may have made one meanwhile.
	if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
		c.Close()
		return nil
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	// The server's own environment names no node: every node's comes in
	// its request.
	var own []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, DirEnv+"=") {
			own = append(own, kv)
		}
	}
	cmd, pr, err := startDetached(prog, []string{agent.ServeCommand, agent.InstanceFlag + "=" + hex.EncodeToString(id[:]), "-ready-fd", "3", sock}, "/", own)
	if err != nil {
		return err
	}
	defer pr.Close()
	go cmd.Wait()
	waitClosed(ctx, pr)
	if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
		c.Close()
		return nil
	}
	return errors.New("the agent server did not listen")
}
