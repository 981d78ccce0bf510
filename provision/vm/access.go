// Package vm is what sortie's cloud backends share about the virtual
// machines they launch: reaching them over SSH with sortie's own key,
// waiting until they answer, and serialising the launches of one cluster
// name. What differs between clouds (the API, the names, the states) stays
// in each backend.
//
// It must not import sortie/controller/...: a provider's part knows nothing of
// jobs.
package vm

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"time"

	"golang.org/x/crypto/ssh"

	"sortie/provision"
	"sortie/provision/sshrun"
)

// Config says how to log in to a cloud's VMs.
type Config struct {
	// User is the account sortie logs in as; required.
	User string
	// ProxyCommand, when set, reaches the VMs as OpenSSH's ProxyCommand
	// does (%h, %p, %r), e.g. through a bastion.
	ProxyCommand string
	// NodeDirRoot is the directory on the VMs under which each node's own
	// directory, named after its instance id, lives; empty means
	// DefaultNodeDirRoot(User).
	NodeDirRoot string
	// HostIDPrefix goes before an instance id where its host key is pinned:
	// every cloud pins in the same known-hosts file, and one cloud's ids
	// must never be taken for another's.
	HostIDPrefix string
	// Now is the clock of the connections' back-off and idle close; nil
	// means time.Now.
	Now func() time.Time
}

// DefaultNodeDirRoot is where node directories live when the config names
// no place: "sortie" in the user's home directory.
func DefaultNodeDirRoot(user string) string {
	if user == "root" {
		return "/root/sortie"
	}
	return "/home/" + user + "/sortie"
}

// Access reaches a cloud's VMs over SSH, keeping one connection per node
// open (sshrun.Pool) from the first runner of the node until its cluster
// is forgotten (Forget, when the provider terminates it) or the access
// closed. It is safe for concurrent use.
type Access struct {
	cfg     Config
	signer  ssh.Signer
	pubLine string
	hosts   *sshrun.KnownHosts
	conns   *sshrun.Pool
}

// Open loads sortie's SSH key and pinned host keys from home/keys, where
// home is SORTIE_HOME, creating the key on first use.
func Open(home string, cfg Config) (*Access, error) {
	if cfg.User == "" {
		return nil, fmt.Errorf("vm access: no SSH user; set the cloud's ssh_user")
	}
	if cfg.NodeDirRoot == "" {
		cfg.NodeDirRoot = DefaultNodeDirRoot(cfg.User)
	}
	keys := filepath.Join(home, "keys")
	signer, line, err := sshrun.LoadOrCreateKey(keys)
	if err != nil {
		return nil, err
	}
	return &Access{cfg: cfg, signer: signer, pubLine: line,
		hosts: sshrun.NewKnownHosts(filepath.Join(keys, sshrun.KnownHostsFile)),
		conns: &sshrun.Pool{Now: cfg.Now}}, nil
}

// PublicKey is sortie's public key.
func (a *Access) PublicKey() ssh.PublicKey { return a.signer.PublicKey() }

// AuthorizedKey is sortie's public key as a line of authorized_keys.
func (a *Access) AuthorizedKey() string { return a.pubLine }

// NodeDir is a node's own directory on its VM.
func (a *Access) NodeDir(instanceID string) string {
	return path.Join(a.cfg.NodeDirRoot, instanceID)
}

// Runner reaches node rank of c at the address addr finds for it, over
// the node's open connection, dialling one when there is none. Closing
// the runner leaves the connection open.
func (a *Access) Runner(ctx context.Context, c *provision.Cluster, rank int,
	addr func(context.Context, provision.Node) (string, error)) (provision.Runner, error) {
	if c == nil || rank < 0 || rank >= len(c.Nodes) {
		return nil, fmt.Errorf("runner: cluster has no node of rank %d", rank)
	}
	n := c.Nodes[rank]
	at, err := addr(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("runner for %s node %d: %w", c.Name, rank, err)
	}
	r, err := a.conns.Runner(ctx, c.Name, sshrun.Config{
		Addr:         at,
		User:         a.cfg.User,
		Signer:       a.signer,
		HostKeyStore: a.hosts,
		HostID:       a.cfg.HostIDPrefix + n.InstanceID,
		ProxyCommand: a.cfg.ProxyCommand,
		Dir:          a.NodeDir(n.InstanceID),
	})
	if err != nil {
		return nil, err // never a nil *Runner in the interface
	}
	return r, nil
}

// Forget closes the connections to cluster's nodes: the provider is
// terminating it. A nil Access (a provider that never reaches its nodes)
// has none.
func (a *Access) Forget(cluster string) {
	if a != nil {
		a.conns.Forget(cluster)
	}
}

// OpenConnections is how many nodes have a connection open.
func (a *Access) OpenConnections() int {
	if a == nil {
		return 0
	}
	return a.conns.Open()
}

// Close closes every connection to the nodes; runners asked for later fail.
func (a *Access) Close() error {
	if a == nil {
		return nil
	}
	return a.conns.Close()
}
