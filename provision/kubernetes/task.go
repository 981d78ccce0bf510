package kubernetes

import (
	"fmt"
	"path"
	"strconv"
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
	// WorkDir is where a task with a workdir or file_mounts runs: an
	// emptyDir volume the container copies the task's files into.
	WorkDir = "/sortie/workdir"
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
	// KeyFiles lists the task's files, a line each: the mode in octal,
	// the key holding the file's bytes (keyFile), the path.
	KeyFiles = "files"
)

// MaxFiles is the most bytes of files (workdir and file_mounts together)
// a task takes: they travel in the parent ConfigMap, which Kubernetes
// holds to 1 MiB with the scripts beside them.
const MaxFiles = 512 << 10

// keyFile is the parent ConfigMap's key of the task's file i.
func keyFile(i int) string { return "file." + strconv.Itoa(i) }

// Phases of a task, as written in the termination message.
const (
	PhaseSetup = provision.PhaseSetup
	PhaseRun   = provision.PhaseRun
)

// containerScript is the container's command: it waits until the task is
// started (KeyStart appears in the task folder: the kubelet refreshes a
// ConfigMap volume when the ConfigMap changes, all its keys at once),
// copies the task's files into workDir (and absolute paths) and runs in
// it when there are any, reads its environment, runs setup then run with
// bash (sh when the image has no bash), and exits with the code of the
// phase that ended it, whose name it wrote to the termination message
// first (a file it cannot write fails setup). SIGTERM (the pod deleted,
// within its grace period) is passed on to the running phase.
func containerScript(taskDir, secretDir, termLog, workDir string) string {
	return fmt.Sprintf(`T=%s S=%s M=%s W=%s
while [ ! -f "$T/%s" ]; do sleep 1; done
if [ -s "$T/%s" ]; then
	printf '%%s' %s >"$M"
	while IFS=' ' read -r mode key path; do
		case $path in /*) dst=$path ;; *) dst=$W/$path ;; esac
		if ! { mkdir -p "$(dirname "$dst")" && cp "$T/$key" "$dst" && chmod "$mode" "$dst"; }; then
			echo "sortie: cannot write $dst (the task's workdir or file_mounts)" >&2
			exit 1
		fi
	done <"$T/%s"
	cd "$W" || exit 1
fi
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
`, node.Quote(taskDir), node.Quote(secretDir), node.Quote(termLog), node.Quote(workDir),
		KeyStart, KeyFiles, PhaseSetup, KeyFiles, KeyEnv, KeyEnv, KeyNodeIPs, KeySetup, PhaseSetup, PhaseRun)
}

// filesData renders files as the parent ConfigMap's KeyFiles list and
// binary keys. A path a line of the list cannot carry, or one leaving the
// task's folder, is refused naming it; so are files over MaxFiles.
func filesData(files []provision.File) (string, map[string][]byte, error) {
	var list strings.Builder
	data := map[string][]byte{}
	total := 0
	for i, f := range files {
		total += len(f.Data)
		if total > MaxFiles {
			return "", nil, fmt.Errorf("workdir and file_mounts: over %d KiB of files; a task on kubernetes takes at most that (they travel in a ConfigMap): put large data in the image, or fetch it in the task's setup", MaxFiles>>10)
		}
		p := f.Path
		if p == "" || strings.ContainsAny(p, "\n\r") || strings.TrimSpace(p) != p {
			return "", nil, fmt.Errorf("file %q: a path with a line break or leading or trailing spaces cannot be handed to a pod; rename it", p)
		}
		if !path.IsAbs(p) {
			if c := path.Clean(p); c == "." || c == ".." || strings.HasPrefix(c, "../") {
				return "", nil, fmt.Errorf("file %q: leaves the task's folder; give a path inside it, or an absolute one", p)
			}
		}
		fmt.Fprintf(&list, "%o %s %s\n", f.Mode&0o7777, keyFile(i), p)
		data[keyFile(i)] = f.Data
	}
	return list.String(), data, nil
}
