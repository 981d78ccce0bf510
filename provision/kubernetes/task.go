package kubernetes

import (
	"fmt"
	"sort"
	"strings"

	"sortie/provision"
	"sortie/provision/node"
)

// Where a pod's container finds its task, and the container's name.
const (
	// TaskDir holds the parent ConfigMap's keys: KeyStart (the task's
	// script, written when the task starts), KeyNodeIPs.
	TaskDir = "/sortie/task"
	// SecretDir holds the cluster's Secret: KeyEnv, the task's
	// environment (its envs and secrets) as shell exports.
	SecretDir = "/sortie/secret"
	// ContainerName is the name of the one container of a node's pod.
	ContainerName = "task"
	// TerminationLog is where the container writes the phase that is
	// running, so that the pod's termination message names the phase
	// that ended it.
	TerminationLog = "/dev/termination-log"
)

// Keys of the parent ConfigMap and of the cluster's Secret.
const (
	KeyNumNodes = "num_nodes"
	KeySetup    = "setup"
	KeyRun      = "run"
	KeyStart    = "start"
	KeyNodeIPs  = "node_ips"
	KeyEnv      = "env"
)

// Phases of a task, as written in the termination message.
const (
	PhaseSetup = provision.PhaseSetup
	PhaseRun   = provision.PhaseRun
)

// containerScript is the container's command: it waits until the task is
// started (KeyStart appears in the task folder: the kubelet refreshes a
// ConfigMap volume when the ConfigMap changes), reads its environment,
// runs setup then run with bash (sh when the image has no bash), and
// exits with the code of the phase that ended it, whose name it wrote to
// the termination message first. SIGTERM (the pod deleted, within its
// grace period) is passed on to the running phase.
func containerScript(taskDir, secretDir, termLog string) string {
	return fmt.Sprintf(`T=%s S=%s M=%s
while [ ! -f "$T/%s" ]; do sleep 1; done
if [ -f "$S/%s" ]; then . "$S/%s"; fi
SORTIE_NODE_IPS=$(cat "$T/%s" 2>/dev/null)
SKYPILOT_NODE_IPS=$SORTIE_NODE_IPS
export SORTIE_NODE_IPS SKYPILOT_NODE_IPS
SH=sh
if command -v bash >/dev/null 2>&1; then SH=bash; fi
child=
trap 'if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi' TERM INT
phase() {
	printf '%%s' "$1" >"$M"
	"$SH" "$T/$1" &
	child=$!
	while :; do
		wait "$child"
		code=$?
		kill -0 "$child" 2>/dev/null || break
	done
	child=
	return "$code"
}
if [ -s "$T/%s" ]; then phase %s || exit "$code"; fi
phase %s
exit "$code"
`, shellQuote(taskDir), shellQuote(secretDir), shellQuote(termLog),
		KeyStart, KeyEnv, KeyEnv, KeyNodeIPs, KeySetup, PhaseSetup, PhaseRun)
}

// envExports renders env as shell export lines in key order; a key that
// is not a shell variable name is an error naming it.
func envExports(env map[string]string) (string, error) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if !node.IsEnvKey(k) {
			return "", fmt.Errorf("envs.%s: not a shell variable name; use letters, digits and _, not starting with a digit", k)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
	}
	return b.String(), nil
}

// shellQuote makes s one shell word with exactly s as its value.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
