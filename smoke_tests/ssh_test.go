package smoke_tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/provision/cloudtest"
)

// TestAWSNodeWatchedOverOneConnection runs a job on AWS (moto, the tests'
// sshd as the node) with a proxy between the controller and the sshd that
// counts the SSH connections: once the job runs, the controller's status
// checks (every 100ms here) make no new one. When the connection is cut
// and the node cannot be reached for a while, the job stays RUNNING with
// the node shown unreachable, the controller reconnects once the node
// answers again, and the job goes on to succeed in its first attempt.
func TestAWSNodeWatchedOverOneConnection(t *testing.T) {
	var counter *cloudtest.CountingProxy
	e := newAWSEnvVia(t, func(s *cloudtest.SSHD) string {
		counter = cloudtest.StartCountingProxy(t, s.Addr)
		return s.ProxyCommandVia(counter.Port())
	}, "controller:\n  unreachable_checks: 600\n")
	marker, done := filepath.Join(e.dir, "running"), filepath.Join(e.dir, "done")
	f := e.write("task.yaml", `
resources:
  cloud: aws
  region: us-east-1
  instance_type: t3.micro
run: |
  touch `+marker+`
  while [ ! -e `+done+` ]; do sleep 0.1; done
  echo finished
`)
	id := e.launch(f)
	waitFile(t, marker)
	e.waitStatus(id, "RUNNING")
	// Warm-up: the launch's and the first checks' connection is open.
	if !counter.WaitLive(1, 20*time.Second) {
		t.Fatalf("%d connections open to the node while it runs, want 1", counter.Live())
	}
	before := counter.Accepted()
	// Some 30 status checks, each of which dialled before.
	time.Sleep(3 * time.Second)
	if n := counter.Accepted() - before; n != 0 {
		t.Errorf("%d SSH handshakes in 3s of status checks every 100ms, want 0 (one connection kept open)", n)
	}

	// The network drops the connection, and the node cannot be reached.
	counter.Refuse(true)
	counter.DropAll()
	d := e.waitFor(id, 30*time.Second, "the node shown unreachable", func(d contract.JobDetail) bool {
		return d.StatusReason != nil && strings.Contains(*d.StatusReason, "cannot reach node 0")
	})
	if d.Status != "RUNNING" {
		t.Fatalf("job %s while its node was unreachable, want RUNNING", d.Status)
	}
	// It answers again: the controller dials again and the reason goes.
	redial := counter.Accepted()
	counter.Refuse(false)
	d = e.waitFor(id, 60*time.Second, "the node reachable again", func(d contract.JobDetail) bool {
		return d.StatusReason == nil || !strings.Contains(*d.StatusReason, "cannot reach")
	})
	if d.Status != "RUNNING" {
		t.Fatalf("job %s after its node came back, want RUNNING", d.Status)
	}
	if n := counter.Accepted() - redial; n < 1 {
		t.Errorf("the node answered again with %d new connections, want a redial", n)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d = e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 1 || d.RecoveryCount != 0 {
		t.Errorf("job ended with %d attempts, %d recoveries; want the first attempt to finish", len(d.Attempts), d.RecoveryCount)
	}
	// The cluster is torn down: its connection closes with it.
	if !counter.WaitLive(0, 30*time.Second) {
		t.Errorf("%d connections open after the job ended, want 0", counter.Live())
	}
}
