// Package cloudtest gives end-to-end tests outside provision/ the cloud
// stand-ins the provider tests use: the moto EC2 emulator behind a
// fault-injecting proxy, and a private sshd playing every node.
package cloudtest

import (
	"context"
	"regexp"
	"testing"

	"sortie/provision"
	"sortie/provision/internal/testenv"
)

// Moto is a running moto_server.
type Moto = testenv.Moto

// EC2Proxy injects capacity errors and spot interruptions in front of moto.
type EC2Proxy = testenv.EC2Proxy

// SSHD is a private sshd on 127.0.0.1.
type SSHD = testenv.SSHD

// StartMoto starts moto_server and fails the test when moto is missing.
func StartMoto(t testing.TB) *Moto { return testenv.StartMoto(t) }

// RunMoto runs moto_server, its output in logPath, until stop: StartMoto
// for a program that is not a test.
func RunMoto(ctx context.Context, logPath string) (endpoint string, stop func(), err error) {
	return testenv.RunMoto(ctx, logPath)
}

// StartEC2Proxy starts the fault-injecting proxy in front of upstream.
func StartEC2Proxy(t testing.TB, upstream string) *EC2Proxy {
	return testenv.StartEC2Proxy(t, upstream)
}

// ServeEC2Proxy serves the proxy until stop: StartEC2Proxy for a program
// that is not a test.
func ServeEC2Proxy(upstream string) (p *EC2Proxy, stop func(), err error) {
	return testenv.ServeEC2Proxy(upstream)
}

// CountingProxy counts the connections made through it to a server.
type CountingProxy = testenv.CountingProxy

// RunSSHD runs a private sshd with its files in dir until stop: StartSSHD
// for a program that is not a test. It must be installed already.
func RunSSHD(dir string) (s *SSHD, stop func(), err error) { return testenv.RunSSHD(dir) }

// SSHDPath is where the sshd RunSSHD runs is installed.
const SSHDPath = testenv.SSHDPath

// ServeCountingProxy forwards connections to target, counting them, until
// its Close.
func ServeCountingProxy(target string) (*CountingProxy, error) {
	return testenv.ServeCountingProxy(target)
}

// StartSSHD starts a private sshd, installing it first when missing.
func StartSSHD(t testing.TB) *SSHD { return testenv.StartSSHD(t) }

// KillNodeProcesses kills the task processes recorded in a node directory,
// as a cloud taking the instance away would, and says how many it killed.
func KillNodeProcesses(dir string) int { return testenv.KillNodeProcesses(dir) }

// KillNodeProcessesUnder kills the task processes of every node under root.
func KillNodeProcessesUnder(root string) { testenv.KillNodeProcessesUnder(root) }

// LiveInstances lists the ids of sortie's instances in region that moto
// has pending or running: what a finished test must leave empty.
func LiveInstances(t testing.TB, endpoint, region string) []string {
	t.Helper()
	body, err := testenv.Call(context.Background(), endpoint, region, "DescribeInstances", map[string]string{
		"Filter.1.Name": "tag:" + provision.TagManaged, "Filter.1.Value.1": "true",
		"Filter.2.Name": "instance-state-name", "Filter.2.Value.1": "pending", "Filter.2.Value.2": "running",
	})
	if err != nil {
		t.Fatalf("describe instances in %s: %v", region, err)
	}
	var ids []string
	for _, m := range regexp.MustCompile(`<instanceId>([^<]+)</instanceId>`).FindAllStringSubmatch(string(body), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// Call sends one EC2 query-protocol request straight to moto, as the cloud
// itself would see it.
func Call(ctx context.Context, endpoint, region, action string, params map[string]string) ([]byte, error) {
	return testenv.Call(ctx, endpoint, region, action, params)
}

// StartCountingProxy forwards connections to target, counting them, until
// the test ends.
func StartCountingProxy(t testing.TB, target string) *CountingProxy {
	return testenv.StartCountingProxy(t, target)
}
