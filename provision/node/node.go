// Package node runs a task on one node through a provision.Runner: it copies
// files over, starts the node agent (cmd/sortie-agent, package
// sortie/provision/node/agent) detached to run the task's setup and run
// phases, asks it about the task, reads its log and stops it. It only ever
// asks the runner to Exec bash scripts with stdin, so the same code works
// for a local directory and for a VM reached over SSH.
//
// The runner's Dir holds the agent's files (see package agent), and:
//
//	started    made atomically (O_EXCL) by the first Start; a directory where
//	           an earlier version made it
//	workdir/   the default working directory of the task
//
// On a VM the agent program is copied once per node, beside the attempts'
// directories: ../.sortie-agent/<sha256>/sortie-agent.
//
// It must not import sortie/controller/...: running a task on a node knows
// nothing of jobs.
package node

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"sortie/provision"
	"sortie/provision/node/agent"
)

// DirEnv is set, to the node directory, in the environment of the agent and
// of every process of the task, so that a provider running nodes on its own
// machine can find all of them, even those that left their process group.
const DirEnv = agent.DirEnv

// Phases of a task, as reported in Status.Phase and recorded in exit_code.
const (
	PhaseSetup = agent.PhaseSetup
	PhaseRun   = agent.PhaseRun
)

// DefaultStopGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultStopGrace = 5 * time.Second

// DefaultTerminationGrace is the time a task told to stop (a notice, a
// cancel) has between SIGTERM and SIGKILL when its
// job_recovery.termination_grace is not given.
const DefaultTerminationGrace = agent.DefaultGrace

// MaxLogChunk bounds the bytes one ReadLog returns, so that one call never
// holds a whole large log in memory; callers read again from the new offset.
const MaxLogChunk = 4 << 20

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
	// Storage, when set, is the node's buckets (agent.FileStorage, read by
	// the sync program); the agent then runs the sync program around the
	// task. StorageEnv is given to the sync program only, never the task.
	Storage    []byte
	StorageEnv map[string]string
	// Mounts are the task's absolute file_mounts destinations; a node
	// whose tasks run in a sandbox (Sandboxer) shows them there.
	Mounts []string
	// FUSE lists, per MOUNT bucket, the programs that can mount it (any
	// one will do); a node with none of one group fails Start with a
	// PrecheckError.
	FUSE [][]string
}

// Sandboxer is a runner whose node runs the task's phases in a sandbox
// (the local provider's): Sandbox says how, nil when they run on the
// machine itself, and an error when the node must have a sandbox and
// cannot.
type Sandboxer interface {
	Sandbox() (*agent.Sandbox, error)
}

// SandboxOf is r's sandbox, nil when r is no Sandboxer.
func SandboxOf(r provision.Runner) (*agent.Sandbox, error) {
	if s, ok := r.(Sandboxer); ok {
		return s.Sandbox()
	}
	return nil, nil
}

// Status is what Poll observed on a node.
type Status struct {
	Started bool   // an agent began on the node (a Start that died half way has not)
	Phase   string // PhaseSetup or PhaseRun: the current one, or the one that ended the task
	Done    bool   // the exit code is written
	// ExitCode is the exit code of Phase when Done; 128+N when killed by signal N.
	ExitCode int
	// Invalid, when Done, says why the exit_code file could not be read as
	// a phase and a code from 0 to 255 (the task can write over it): the
	// code is then unknown, and ExitCode and Phase mean nothing.
	Invalid string
	// AgentAlive tells "no exit code yet" from "the agent died without
	// writing one" (the node rebooted, or someone killed it).
	AgentAlive bool
	// AgentLost says the agent recorded its pid and is gone without an
	// exit code: killed (kill -9), crashed, or the node rebooted. The
	// task's code is unknown; it is never one the task exited with.
	AgentLost bool
	// Stopped says the exit code is the one sortie caused: Stop was asked
	// (or a preemption notice heard) before the phase ended, and the phase
	// ended by its signal (143 or 137). A task that ended on its own keeps
	// its code, Stopped false, even when Stop was asked after.
	Stopped bool
	// StopAsked says Stop was asked on this node, before or after the end.
	StopAsked bool
	// Unwritten says the agent could not write its exit_code file (a full
	// disk) and recorded the code in a marker's name instead.
	Unwritten bool
	// Notice is the last preemption notice the agent heard (a notice that
	// ends the node stops the task); nil when none.
	Notice *agent.Notice
	// Storage is what the node's bucket syncs did, per mount; nil when
	// the task has no buckets or nothing was synced yet.
	Storage []agent.MountSync
	// Progress is the highest progress the task reported on the node
	// (agent.ProgressEnv), as the agent recorded it; nil when none, or
	// when the record's tag does not verify with the node's key.
	Progress *int64
}

// prelude opens every script: it sets D to the node directory, resolved when
// it exists so that it matches the agent's own command line, and defines the
// liveness checks. Liveness ignores zombies, which a machine whose init does
// not reap keeps forever, and a pid reused by another program. Whatever
// umask it was started with, nothing it or the task makes is writable by
// another user (umask go-w keeps a stricter umask as it is).
const prelude = `
umask go-w
[ -d "$D" ] && D=$(cd "$D" && pwd -P)

# recorded NAME sets REPLY to the number the agent recorded in NAME, or in
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

# agent_alive: the recorded pid is a live sortie-agent with $D among its
# arguments.
agent_alive() {
	local p l rest a
	recorded pid && p=$REPLY && kill -0 "$p" 2>/dev/null || return 1
	[ -d /proc/self ] || return 0
	read -r l 2>/dev/null <"/proc/$p/stat" || return 1
	rest=${l##*) }
	a=($rest)
	case ${a[0]} in Z | X | x) return 1 ;; esac
	tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | {
		read -r l || exit 1
		[ "${l##*/}" = sortie-agent ] || exit 1
		grep -qxF -- "$D"
	}
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
		fmt.Fprintf(&b, "%s=%s\n", vars[i], Quote(vars[i+1]))
	}
	b.WriteString(prelude)
	b.WriteString(body)
	return b.String()
}

// Quote makes s one bash word with exactly s as its value.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// IsEnvKey reports whether k is a shell variable name.
func IsEnvKey(k string) bool {
	for i, c := range k {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		digit := c >= '0' && c <= '9'
		if !letter && !(digit && i > 0) {
			return false
		}
	}
	return k != ""
}

// EnvExports renders a task's envs as bash export lines in key order. A
// key that is not a shell variable name, or a value holding a NUL byte, is
// an error naming it under envs.
func EnvExports(env map[string]string) ([]byte, error) {
	keys := slices.Sorted(maps.Keys(env))
	var b bytes.Buffer
	for _, k := range keys {
		if !IsEnvKey(k) {
			return nil, fmt.Errorf("envs.%s: not a shell variable name; use letters, digits and _, not starting with a digit", k)
		}
		v := env[k]
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("envs.%s: value holds a NUL byte, which no environment variable can carry", k)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, Quote(v))
	}
	return b.Bytes(), nil
}

const startBody = `
set -e
# The agent program on this node, copied once per node (see Start).
A=${D%/*}/.sortie-agent/$SUM/sortie-agent
if [ ! -x "$A" ]; then
	echo "the node agent $A is not on the node" >&2
	exit 90
fi
# A MOUNT bucket needs a FUSE program: one of each comma-separated group.
for g in $FUSE; do
	ok=
	for p in ${g//,/ }; do
		command -v "$p" >/dev/null 2>&1 && ok=1
	done
	if [ -z "$ok" ]; then
		echo "${g//,/ or }" >&2
		exit 92
	fi
done
# The prelude resolved $D if it was there already.
if [ ! -d "$D" ]; then
	mkdir -p "$D"
	D=$(cd "$D" && pwd -P)
fi
# The node's key, one line of hex (empty for none), before the tar: kept in
# this shell's memory and handed to the agent on its stdin, never written to
# a file, the environment or a command line.
IFS= read -r KEY
S=$(mktemp -d "$D/.start.XXXXXX")
tar -x -f - -C "$S" --no-same-owner
# The first Start to make started (noclobber: O_EXCL) owns the node; a later one (a
# controller that restarted and does not know) leaves the running task
# alone. A start whose controller died between the claim and the agent's
# beginning is finished by the next one: the agent's own claim (begun)
# keeps two from running.
if ! (set -C && : >"$D/started") 2>/dev/null; then
	if [ -e "$D/begun" ] || [ -e "$D/pid" ] || [ ! -e "$D/started" ]; then
		rm -rf "$S"
		[ -e "$D/started" ] && exit 0
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
ln -sfn "$A" "$S/agent"
# The sync program, beside the agent, when the task has buckets.
if [ -n "$SYNCSUM" ]; then
	Y=${D%/*}/.sortie-agent/$SYNCSUM/sortie-sync
	if [ ! -x "$Y" ]; then
		rm -rf "$S"
		echo "the sync program $Y is not on the node" >&2
		exit 91
	fi
	ln -sfn "$Y" "$S/sync"
fi
mv -f "$S"/* "$D"/
rmdir "$S"
# The agent runs detached, in a session of its own, ignoring SIGHUP. Its
# fd 3 is the write end of a pipe that it closes once it has recorded its
# pid: reading to the end of the pipe returns then, or as soon as the agent
# dies, so that a Poll right after Start never sees a started node without
# an agent, and no one sleeps waiting for the pid file.
exec 3< <(
	trap '' HUP
	export SORTIE_NODE_DIR=$D
	if [ -n "$KEY" ]; then
		exec setsid "$A" run -key-stdin -ready-fd 3 -notice "$NOTICE" -notice-endpoint "$ENDPOINT" -grace "$GRACE" "$D" 3>&1 >/dev/null 2>&1 < <(printf '%s\n' "$KEY")
	fi
	exec setsid "$A" run -ready-fd 3 -notice "$NOTICE" -notice-endpoint "$ENDPOINT" -grace "$GRACE" "$D" 3>&1 >/dev/null 2>&1 </dev/null
)
KEY=
read -r -t 5 -u 3 _ || :
exec 3<&-
# begun without a pid yet: another Start's agent owns the node and is
# about to record its pid.
[ -e "$D/pid" ] || [ -e "$D/begun" ] && exit 0
echo "the node agent wrote no pid file within 5s; see $D" >&2
exit 1
`

// installAgentBody puts the agent program (stdin) where startBody looks for
// it, checking its sha256 when the node can.
const installAgentBody = `
set -e
T=${D%/*}/.sortie-agent/$SUM
mkdir -p "$T"
F=$(mktemp "$T/.$NAME.XXXXXX")
trap 'rm -f "$F"' EXIT
cat >"$F"
if command -v sha256sum >/dev/null 2>&1; then
	got=$(sha256sum "$F")
	if [ "${got%% *}" != "$SUM" ]; then
		echo "$NAME arrived damaged (sha256 ${got%% *}, want $SUM)" >&2
		exit 1
	fi
fi
chmod 755 "$F"
mv -f "$F" "$T/$NAME"
`

// exitNoAgent and exitNoSync are startBody's exit codes when the node
// lacks the agent or the sync program.
const (
	exitNoAgent = 90
	exitNoSync  = 91
	exitNoFUSE  = 92
)

// SyncEnv names the sync program for this process, overriding the
// sortie-sync beside its own executable (tests set it).
const SyncEnv = "SORTIE_SYNC"

// SyncProgramName is the sync program's file name.
const SyncProgramName = "sortie-sync"

// SyncProgram finds the sync program: $SORTIE_SYNC, else sortie-sync
// beside this process's executable.
func SyncProgram() (string, error) {
	return besideExecutable(SyncEnv, SyncProgramName)
}

// RunSync runs the sync program on this machine, with this process's
// environment, and returns its exit code and what it printed (stdout and
// stderr together, trimmed); err is for a program that could not run.
func RunSync(ctx context.Context, args ...string) (code int, msg string, err error) {
	prog, err := SyncProgram()
	if err != nil {
		return 0, "", err
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), strings.TrimSpace(out.String()), nil
	}
	return 0, strings.TrimSpace(out.String()), err
}

// AgentEnv names the agent program for this process, overriding the
// sortie-agent beside its own executable (tests set it).
const AgentEnv = "SORTIE_AGENT"

// program is the agent program found on this machine.
type program struct {
	path string
	sum  string // hex sha256 of its bytes
}

var (
	programMu    sync.Mutex
	programCache = map[string]programEntry{}
)

type programEntry struct {
	size int64
	mod  time.Time
	sum  string
}

// AgentProgram finds the agent program: $SORTIE_AGENT, else sortie-agent
// beside this process's executable, as the CLI finds sortie-controller.
func AgentProgram() (string, error) {
	return besideExecutable(AgentEnv, agent.Program)
}

// besideExecutable finds a program: $env, else name beside this
// process's executable.
func besideExecutable(env, name string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("%s=%q: not an absolute path; give the %s program's absolute path", env, p, name)
		}
		return p, nil
	}
	exe, err := executable()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", name, err)
	}
	p := filepath.Join(filepath.Dir(exe), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is missing: build it beside %s (make build) or set %s", p, filepath.Base(exe), env)
	}
	return p, nil
}

// executable is this process's executable, its symlinks resolved: looked
// up once, as it does not move while the process runs.
var executable = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, nil
})

// findProgram is AgentProgram with its sha256, computed once per version
// of the file.
func findProgram() (program, error) {
	p, err := AgentProgram()
	if err != nil {
		return program{}, err
	}
	return hashProgram(p)
}

// hashProgram is the program at p with its sha256, computed once per
// version of the file.
func hashProgram(p string) (program, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return program{}, fmt.Errorf("the node agent: %w", err)
	}
	programMu.Lock()
	defer programMu.Unlock()
	if e, ok := programCache[p]; ok && e.size == fi.Size() && e.mod.Equal(fi.ModTime()) {
		return program{path: p, sum: e.sum}, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return program{}, fmt.Errorf("the node agent: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return program{}, fmt.Errorf("the node agent: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	programCache[p] = programEntry{size: fi.Size(), mod: fi.ModTime(), sum: sum}
	return program{path: p, sum: sum}, nil
}

// Start starts the task on the node behind r, detached from this process so
// that it outlives it: the node agent runs it. On a node without the agent
// program (a new VM) the program is copied first, once per node: a later
// attempt on the same cluster finds it by its sha256, and a changed program
// is copied again. It is idempotent: once a Start has claimed the node,
// later calls return nil without starting anything.
func Start(ctx context.Context, r provision.Runner, spec StartSpec) error {
	env, err := EnvExports(spec.Env)
	if err != nil {
		// No node can run an env no environment can hold.
		return provision.Prechecks(fmt.Errorf("start task in %s: %w", r.Dir(), err))
	}
	if spec.TerminationGrace < 0 {
		return fmt.Errorf("start task in %s: termination grace %s is negative; give a positive duration or 0 for %s", r.Dir(), spec.TerminationGrace, agent.DefaultGrace)
	}
	files := []tarFile{
		{"env", env, 0o600},
		{"run.sh", []byte(spec.Run), 0o644},
	}
	if spec.Setup != "" {
		files = append(files, tarFile{"setup.sh", []byte(spec.Setup), 0o644})
	}
	sb, err := SandboxOf(r)
	if err != nil {
		return provision.Prechecks(fmt.Errorf("start task in %s: %w", r.Dir(), err))
	}
	if spec.Container != nil {
		// On a runner that sandboxes, Upload put the absolute mounts in
		// the node directory's mounts folder: the container is shown them
		// from there.
		files = append(files, tarFile{"container.sh", []byte(containerScript(r.Dir(), *spec.Container, sb != nil)), 0o644})
	}
	if sb != nil && spec.Container == nil {
		s := *sb
		s.Mounts = append(s.Mounts[:len(s.Mounts):len(s.Mounts)], spec.Mounts...)
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("start task in %s: %w", r.Dir(), err)
		}
		files = append(files, tarFile{agent.FileSandbox, b, 0o644})
	}
	var syncProg program
	if spec.Storage != nil {
		senv := make([]string, 0, len(spec.StorageEnv))
		for k, v := range spec.StorageEnv {
			if !IsEnvKey(k) || strings.ContainsAny(v, "\n\x00") {
				return provision.Prechecks(fmt.Errorf("start task in %s: storage env %q cannot be passed on", r.Dir(), k))
			}
			senv = append(senv, k+"="+v+"\n")
		}
		sort.Strings(senv)
		files = append(files, tarFile{agent.FileStorage, spec.Storage, 0o644}, tarFile{agent.FileStorageEnv, []byte(strings.Join(senv, "")), 0o600})
		p, err := SyncProgram()
		if err == nil {
			syncProg, err = hashProgram(p)
		}
		if err != nil {
			return fmt.Errorf("start task in %s: the task has buckets: %w", r.Dir(), err)
		}
	}
	tarred, err := tarFiles(files)
	if err != nil {
		return fmt.Errorf("start task in %s: %w", r.Dir(), err)
	}
	// The key goes first, one line (see startBody).
	key := keyOf(r)
	if key != nil && len(key) != agent.KeySize {
		return fmt.Errorf("start task in %s: the node's key is %d bytes, want %d", r.Dir(), len(key), agent.KeySize)
	}
	payload := append([]byte(hex.EncodeToString(key)+"\n"), tarred...)
	// A node that is no real machine (the sim's) needs no program; one
	// that does says so, and then the error says why there is none.
	prog, progErr := findProgram()
	grace := spec.TerminationGrace
	if grace == 0 {
		grace = agent.DefaultGrace
	}
	s := script(startBody, "D", r.Dir(), "W", spec.Workdir, "SUM", prog.sum,
		"NOTICE", spec.NoticeSource, "ENDPOINT", spec.NoticeEndpoint, "GRACE", grace.String(), "SYNCSUM", syncProg.sum, "FUSE", fuseGroups(spec.FUSE))
	_, err = r.Exec(ctx, s, bytes.NewReader(payload))
	var ee *provision.ExitError
	// A new node lacks the programs: each is copied once, then the start
	// is tried again.
	for range 2 {
		if !errors.As(err, &ee) || (ee.Code != exitNoAgent && ee.Code != exitNoSync) {
			break
		}
		what, name := prog, agent.Program
		if ee.Code == exitNoAgent && progErr != nil {
			return fmt.Errorf("start task in %s: %w", r.Dir(), progErr)
		}
		if ee.Code == exitNoSync {
			what, name = syncProg, SyncProgramName
		}
		if err := installProgram(ctx, r, what, name); err != nil {
			return fmt.Errorf("start task in %s: %w", r.Dir(), err)
		}
		_, err = r.Exec(ctx, s, bytes.NewReader(payload))
	}
	if errors.As(err, &ee) && ee.Code == exitNoFUSE {
		return &PrecheckError{Msg: fmt.Sprintf("mode MOUNT needs %s on the node, which has none; use mode: MOUNT_CACHED (downloaded before setup, what changes uploaded)", strings.TrimSpace(ee.Stderr))}
	}
	if err != nil {
		return fmt.Errorf("start task in %s: %w", r.Dir(), err)
	}
	return nil
}

// fuseGroups renders StartSpec.FUSE as the start script reads it.
func fuseGroups(groups [][]string) string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = strings.Join(g, ",")
	}
	return strings.Join(out, " ")
}

// installProgram copies a program (the agent, the sync program) to the
// node behind r, as name in the directory of its sha256.
func installProgram(ctx context.Context, r provision.Runner, prog program, name string) error {
	f, err := os.Open(prog.path)
	if err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	defer f.Close()
	if _, err := r.Exec(ctx, script(installAgentBody, "D", r.Dir(), "SUM", prog.sum, "NAME", name), f); err != nil {
		return fmt.Errorf("copy %s %s: %w", name, prog.path, err)
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
