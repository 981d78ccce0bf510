// Package node runs a task on one node through a provision.Runner: it copies
// files over, starts a detached wrapper that runs the task's setup and run
// phases, polls it, reads its log and stops it. It only ever asks the runner
// to Exec bash scripts with stdin, so the same code works for a local
// directory and for a VM reached over SSH.
//
// Everything lives in the runner's Dir:
//
//	wrapper.sh env cwd setup.sh run.sh  written by Start
//	container.sh                        runs a phase in the task's container image, when it has one
//	started/                            made atomically by the first Start
//	pid                                 the wrapper's pid (its own session and group)
//	phase pgid.setup pgid.run           the current phase and each phase's process group
//	pid.is.N pgid.<phase>.is.N          the same, when the disk had no room for the file's bytes
//	log                                 stdout and stderr of both phases
//	begun                               made by the wrapper that owns the node, first
//	exit_code                           "<phase> <code> <-|stop>", written once, durably
//	exit_code.unwritten.<phase>.<code>.<-|stop>  the same, when exit_code could not be written
//	stop                                asks the wrapper not to begin another phase
//	workdir/                            the default working directory of the task
package node

import (
	"archive/tar"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"time"

	"sortie/provision"
	"sortie/provision/node/notice"
)

// DirEnv is set, to the node directory, in the environment of the wrapper and
// of every process of the task, so that a provider running nodes on its own
// machine can find all of them, even those that left their process group.
const DirEnv = "SORTIE_NODE_DIR"

// Phases of a task, as reported in Status.Phase and recorded in exit_code.
const (
	PhaseSetup = "setup"
	PhaseRun   = "run"
)

// DefaultStopGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultStopGrace = 5 * time.Second

// MaxLogChunk bounds the bytes one ReadLog returns, so that one call never
// holds a whole large log in memory; callers read again from the new offset.
const MaxLogChunk = 4 << 20

//go:embed wrapper.sh
var wrapperScript string

// StartSpec is what Start runs on a node.
type StartSpec struct {
	Setup, Run string
	// Env is exported to both phases: SORTIE_* and SKYPILOT_* values, the
	// task's envs and secrets. Keys must be shell variable names.
	Env map[string]string
	// Workdir is the directory both phases run in: absolute, or relative to
	// the node directory; "" is the node directory's "workdir".
	Workdir string
	// Container, when set, runs both phases in that container image.
	Container *Container
	// NoticeSource is where the agent hears preemption notices
	// (notice.SourceAWS, SourceGCE, SourceLocal); "" hears none.
	// NoticeEndpoint overrides the metadata service's address.
	NoticeSource, NoticeEndpoint string
	// TerminationGrace is the time between a notice's SIGTERM and SIGKILL
	// (never later than the notice's deadline); 0 is agent.DefaultGrace.
	TerminationGrace time.Duration
}

// Status is what Poll observed on a node.
type Status struct {
	Started bool   // a wrapper began on the node (a Start that died half way has not)
	Phase   string // PhaseSetup or PhaseRun: the current one, or the one that ended the task
	Done    bool   // the exit code is written
	// ExitCode is the exit code of Phase when Done; 128+N when killed by signal N.
	ExitCode int
	// Invalid, when Done, says why the exit_code file could not be read as
	// a phase and a code from 0 to 255 (the task can write over it): the
	// code is then unknown, and ExitCode and Phase mean nothing.
	Invalid string
	// WrapperAlive tells "no exit code yet" from "the wrapper died without
	// writing one" (the node rebooted, or someone killed it).
	WrapperAlive bool
	// Stopped says the exit code is the one sortie caused: Stop was asked
	// before the phase ended, and the phase ended by its signal (143 or
	// 137). A task that ended on its own keeps its code, Stopped false,
	// even when Stop was asked after.
	Stopped bool
	// StopAsked says Stop was asked on this node, before or after the end.
	StopAsked bool
	// Unwritten says the wrapper could not write its exit_code file (a full
	// disk) and recorded the code in a marker's name instead.
	Unwritten bool
	// Notice is the last preemption notice the agent heard (a notice that
	// ends the node stops the task); nil when none.
	Notice *notice.Notice
}

// prelude opens every script: it sets D to the node directory, resolved when
// it exists so that it matches the wrapper's own command line, and defines the
// liveness checks. Liveness ignores zombies, which a machine whose init does
// not reap keeps forever, and a pid reused by another program.
const prelude = `
[ -d "$D" ] && D=$(cd "$D" && pwd -P)

# recorded NAME sets REPLY to the number the wrapper recorded in NAME, or in
# the name of NAME.is.N when the disk had no room for NAME's bytes.
recorded() {
	local f
	if [ -f "$D/$1" ]; then
		read -r REPLY <"$D/$1"
		return
	fi
	for f in "$D/$1".is.*; do
		[ -f "$f" ] || continue
		REPLY=${f##*.is.}
		return 0
	done
	return 1
}

wrapper_alive() {
	local p l rest a
	recorded pid && p=$REPLY && kill -0 "$p" 2>/dev/null || return 1
	[ -d /proc/self ] || return 0
	read -r l 2>/dev/null <"/proc/$p/stat" || return 1
	rest=${l##*) }
	a=($rest)
	case ${a[0]} in Z | X | x) return 1 ;; esac
	tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | grep -qxF "$D/wrapper.sh"
}

group_alive() {
	local f l rest a
	kill -0 -- "-$1" 2>/dev/null || return 1
	[ -d /proc/self ] || return 0
	for f in /proc/[0-9]*/stat; do
		read -r l 2>/dev/null <"$f" || continue
		rest=${l##*) }
		a=($rest)
		[ "${a[2]}" = "$1" ] || continue
		case ${a[0]} in Z | X | x) continue ;; esac
		return 0
	done
	return 1
}
`

// script prefixes body with shell assignments of vars (name, value pairs),
// quoted so that no value is ever parsed as shell code, and the prelude.
func script(body string, vars ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(vars); i += 2 {
		fmt.Fprintf(&b, "%s=%s\n", vars[i], quote(vars[i+1]))
	}
	b.WriteString(prelude)
	b.WriteString(body)
	return b.String()
}

// quote makes s one bash word with exactly s as its value.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isEnvKey reports whether k is a shell variable name.
func isEnvKey(k string) bool {
	for i, c := range k {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		digit := c >= '0' && c <= '9'
		if !letter && !(digit && i > 0) {
			return false
		}
	}
	return k != ""
}

// envFile renders env as bash export lines in key order.
func envFile(env map[string]string) ([]byte, error) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		if !isEnvKey(k) {
			return nil, fmt.Errorf("env %q: not a shell variable name (letters, digits and _, not starting with a digit)", k)
		}
		v := env[k]
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env %s: value holds a NUL byte, which no environment variable can carry", k)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, quote(v))
	}
	return b.Bytes(), nil
}

const startBody = `
set -e
# The prelude resolved $D if it was there already.
if [ ! -d "$D" ]; then
	mkdir -p "$D"
	D=$(cd "$D" && pwd -P)
fi
S=$(mktemp -d "$D/.start.XXXXXX")
tar -x -f - -C "$S" --no-same-owner
# The first Start to make this directory owns the node; a later one (a
# controller that restarted and does not know) leaves the running task
# alone. A start whose controller died between the claim and the wrapper's
# beginning is finished by the next one: the wrapper's own claim (begun)
# keeps two from running.
if ! mkdir "$D/started" 2>/dev/null; then
	if [ -e "$D/begun" ] || [ -e "$D/pid" ] || [ ! -d "$D/started" ]; then
		rm -rf "$S"
		[ -d "$D/started" ] && exit 0
		echo "cannot make $D/started" >&2
		exit 1
	fi
fi
case $W in
"") W=$D/workdir ;;
/*) ;;
*) W=$D/$W ;;
esac
mkdir -p "$W"
printf '%s' "$W" >"$S/cwd"
mv -f "$S"/* "$D"/
rmdir "$S"
# The wrapper runs detached, in a session of its own, ignoring SIGHUP as under
# nohup. Its fd 3 is the write end of a pipe that it closes once it has
# recorded its pid: reading to the end of the pipe returns then, or as soon
# as the wrapper dies, so that a Poll right after Start never sees a started
# node without a wrapper, and no one sleeps waiting for the pid file.
exec 3< <(
	trap '' HUP
	export SORTIE_NODE_DIR=$D
	exec setsid "$BASH" "$D/wrapper.sh" "$D" 3>&1 >/dev/null 2>&1 </dev/null
)
read -r -t 5 -u 3 _ || :
exec 3<&-
# begun without a pid yet: another Start's wrapper owns the node and is
# about to record its pid.
[ -e "$D/pid" ] || [ -e "$D/begun" ] && exit 0
echo "the wrapper wrote no pid file within 5s; see $D" >&2
exit 1
`

// Start starts the task on the node behind r, detached from this process so
// that it outlives it. It is idempotent: once a Start has claimed the node,
// later calls return nil without starting anything.
func Start(ctx context.Context, r provision.Runner, spec StartSpec) error {
	env, err := envFile(spec.Env)
	if err != nil {
		// No node can run an env no environment can hold.
		return provision.Prechecks(fmt.Errorf("start task in %s: %w", r.Dir(), err))
	}
	files := []tarFile{
		{"wrapper.sh", []byte(wrapperScript), 0o644},
		{"env", env, 0o600},
		{"run.sh", []byte(spec.Run), 0o644},
	}
	if spec.Setup != "" {
		files = append(files, tarFile{"setup.sh", []byte(spec.Setup), 0o644})
	}
	if spec.Container != nil {
		files = append(files, tarFile{"container.sh", []byte(containerScript(r.Dir(), *spec.Container)), 0o644})
	}
	payload, err := tarFiles(files)
	if err != nil {
		return fmt.Errorf("start task in %s: %w", r.Dir(), err)
	}
	s := script(startBody, "D", r.Dir(), "W", spec.Workdir)
	if _, err := r.Exec(ctx, s, bytes.NewReader(payload)); err != nil {
		return fmt.Errorf("start task in %s: %w", r.Dir(), err)
	}
	return nil
}

type tarFile struct {
	name string
	data []byte
	mode int64
}

func tarFiles(files []tarFile) ([]byte, error) {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
