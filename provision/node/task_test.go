package node_test

import (
	"context"
	"io"
	"testing"

	"sortie/provision/node"
)

// dirRunner is a node reached at dir; here says whether dir is on this
// machine (LocalDir).
type dirRunner struct{ dir string }

func (r dirRunner) Exec(context.Context, string, io.Reader) ([]byte, error) { return nil, nil }
func (r dirRunner) Dir() string                                             { return r.dir }
func (r dirRunner) Close() error                                            { return nil }

type hereRunner struct{ dirRunner }

func (r hereRunner) LocalDir() string { return r.dir }

// A node whose directory is on this machine has its attempt's log there,
// a LocalLogger; any other node's task is not one.
func TestOnlyANodeOnThisMachineHasALocalLog(t *testing.T) {
	nt := node.AgentTask(node.ForAttempt(hereRunner{dirRunner{"/home/u/.sortie/local/clusters/c/node-0"}}, 3))
	ll, ok := nt.(node.LocalLogger)
	if !ok {
		t.Fatal("the task of a node on this machine is no LocalLogger")
	}
	if path, ok := ll.LocalLog(); !ok || path != "/home/u/.sortie/local/clusters/c/node-0/attempt-3/log" {
		t.Errorf("LocalLog is %q, %v; want the attempt's log", path, ok)
	}
	for _, r := range []node.Task{
		node.AgentTask(node.ForAttempt(dirRunner{"/home/ubuntu/.sortie"}, 3)),
		node.AgentTask(dirRunner{"/home/ubuntu/.sortie"}),
	} {
		if _, ok := r.(node.LocalLogger); ok {
			t.Errorf("%T of a remote node is a LocalLogger", r)
		}
	}
}
