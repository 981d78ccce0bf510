package node

import (
	"context"
	"io"
	"strconv"
	"time"

	"sortie/provision"
	"sortie/provision/node/agent"
)

// CallTimeout bounds one command on a node. A connection that dies without
// closing would otherwise hold its job's reconcile forever; a call that
// times out counts as a failed check of the node.
const CallTimeout = 5 * time.Minute

// ForAttempt reaches a node in a directory of one attempt's own, so that a
// restart on the same cluster never mixes its files with the last
// attempt's, and bounds every command by CallTimeout.
func ForAttempt(r provision.Runner, attempt int) provision.Runner {
	return ForAttemptKey(r, attempt, nil)
}

// ForAttemptKey is ForAttempt with the node's key (NodeKey): Start gives it
// to the agent, which tags its exit code record with it, and Poll takes no
// exit code whose tag does not verify. A nil key is an attempt from before
// keys, whose records carry none.
func ForAttemptKey(r provision.Runner, attempt int, key []byte) provision.Runner {
	return attemptRunner{Runner: r, dir: r.Dir() + "/attempt-" + strconv.Itoa(attempt), key: key}
}

// NodeKey is node rank's key of an attempt whose key is attemptKey; nil
// when the attempt has none.
func NodeKey(attemptKey []byte, rank int) []byte {
	if attemptKey == nil {
		return nil
	}
	return agent.NodeKey(attemptKey, rank)
}

// keyOf is the node's key that r carries, nil when none.
func keyOf(r provision.Runner) []byte {
	if k, ok := r.(interface{ nodeKey() []byte }); ok {
		return k.nodeKey()
	}
	return nil
}

type attemptRunner struct {
	provision.Runner
	dir string
	key []byte
}

func (r attemptRunner) nodeKey() []byte { return r.key }

func (r attemptRunner) Dir() string { return r.dir }

// Sandbox is the node's sandbox (Sandboxer), nil when it has none.
func (r attemptRunner) Sandbox() (*agent.Sandbox, error) { return SandboxOf(r.Runner) }

func (r attemptRunner) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return r.Runner.Exec(ctx, script, stdin)
}

// Attach runs script through the node's runner when it can attach a
// terminal (provision.Attacher), unbounded: a shell lasts as long as its
// user wants.
func (r attemptRunner) Attach(ctx context.Context, script string, stdio provision.Stdio) (int, error) {
	at, ok := r.Runner.(provision.Attacher)
	if !ok {
		return 0, errNoAttach
	}
	return at.Attach(ctx, script, stdio)
}
