package node

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"sortie/provision"
	"sortie/provision/node/agent"
)

// startFile is one file of Start's payload.
type startFile struct {
	name string
	data []byte
	mode fs.FileMode
	mod  time.Time
}

// StartHere does what the Start script does, for a node directory on this
// machine, without a shell and the commands it runs: claim the node, put
// the payload's files in, link the agent program (AgentProgram, run straight from where it was built) and
// start it detached, returning once it has recorded its pid. env is the
// environment the script would run with. ok is false, with nothing done, for
// a request the script had better answer (an odd directory or payload); the
// caller then runs the script. A failure after the node was touched is a
// provision.ExitError, as the script's would be.
func StartHere(ctx context.Context, req Request, payload []byte, env []string) (ok bool, err error) {
	dir := req.Dir
	if req.Op != OpStart || !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || strings.ContainsRune(dir, '\n') {
		return false, nil
	}
	files, ok := startPayload(payload)
	if !ok {
		return false, nil
	}
	prog, err := AgentProgram()
	if err != nil {
		return true, &provision.ExitError{Code: 1, Stderr: err.Error() + "\n"}
	}
	if missing := missingFUSE(req.Vars["FUSE"], env); missing != "" {
		return true, &provision.ExitError{Code: exitNoFUSE, Stderr: missing + "\n"}
	}
	for _, f := range files {
		// mv would move the file into a directory of that name.
		if isDir(dir + "/" + f.name) {
			return false, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return true, err
	}
	fail := func(err error) (bool, error) {
		return true, &provision.ExitError{Code: 1, Stderr: err.Error() + "\n"}
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fail(err)
	}
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fail(err)
	}
	// The first Start to make this directory owns the node and writes its
	// files in place; any later one leaves the running task alone, unless
	// no agent began: then it finishes the start a dead controller left
	// half done, putting each file in place whole (written beside it, then
	// renamed over), so that an agent the first Start begins meanwhile
	// never reads a part of one.
	first := true
	if err := agent.WriteNew(d+"/started", nil, 0o666, true); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return fail(err)
		}
		if claimed(d) {
			return true, nil
		}
		first = false
	}
	for _, f := range files {
		if err := putStartFile(d, f.name, first, func(path string, excl bool) error { return writeStartFile(path, f, excl) }); err != nil {
			return fail(err)
		}
	}
	w := req.Vars["W"]
	switch {
	case w == "":
		w = d + "/" + agent.DefaultWorkdir
	case strings.HasPrefix(w, "/"):
	default:
		w = d + "/" + w
	}
	if err := os.MkdirAll(w, 0o777); err != nil {
		return fail(err)
	}
	// The default working directory goes without saying (agent.ReadCwd).
	if w != d+"/"+agent.DefaultWorkdir {
		if err := putStartFile(d, agent.FileCwd, first, func(path string, excl bool) error { return agent.WriteNew(path, []byte(w), 0o666, excl) }); err != nil {
			return fail(err)
		}
	}
	links := [][2]string{}
	if req.Vars["SYNCSUM"] != "" {
		// The task has buckets: the sync program, run straight from
		// where it was built, as the agent is.
		sp, err := SyncProgram()
		if err != nil {
			return fail(err)
		}
		links = append(links, [2]string{agent.FileSync, sp})
	}
	for _, l := range links {
		if err := putStartFile(d, l[0], first, func(path string, _ bool) error { return os.Symlink(l[1], path) }); err != nil {
			return fail(err)
		}
	}
	// The agent's link last: a node with it has every file in place. A
	// node an agent server runs goes without one (its served file says an
	// agent began: see AnswerHere); one that gets an agent of its own has
	// it made before that agent starts.
	link := func() error {
		return putStartFile(d, agent.FileAgent, first, func(path string, _ bool) error { return os.Symlink(prog, path) })
	}
	if !servable(ctx) {
		if err := link(); err != nil {
			return fail(err)
		}
		link = func() error { return nil }
	}
	if err := startAgent(ctx, prog, d, env, req.Vars, link); err != nil {
		return fail(err)
	}
	return true, nil
}

// missingFUSE is the start script's FUSE check: the first group of which
// the PATH of env has no program, as "a or b"; "" when none is missing.
func missingFUSE(groups string, env []string) string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, g := range strings.Fields(groups) {
		alts := strings.Split(g, ",")
		found := false
		for _, p := range alts {
			for _, dir := range filepath.SplitList(path) {
				if fi, err := os.Stat(filepath.Join(dir, p)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					found = true
				}
			}
		}
		if !found {
			return strings.Join(alts, " or ")
		}
	}
	return ""
}

// startPayload reads Start's tar of plain files; ok is false for anything
// else, which the script is left to unpack.
func startPayload(payload []byte) ([]startFile, bool) {
	var files []startFile
	seen := map[string]bool{}
	tr := tar.NewReader(bytes.NewReader(payload))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, seen["run.sh"]
		}
		if err != nil || h.Typeflag != tar.TypeReg || strings.ContainsAny(h.Name, "/\n") ||
			h.Name == "" || h.Name == "." || h.Name == ".." || strings.HasPrefix(h.Name, ".") || h.Name == "cwd" || h.Name == agent.FileAgent || h.Name == agent.FileSync || seen[h.Name] {
			return nil, false
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, false
		}
		seen[h.Name] = true
		files = append(files, startFile{name: h.Name, data: b, mode: fs.FileMode(h.Mode).Perm(), mod: h.ModTime})
	}
}

// writeStartFile writes f as tar unpacks it for root: its mode exactly, its
// modification time. excl: the file must not be there yet.
func writeStartFile(path string, f startFile, excl bool) error {
	if err := agent.WriteNew(path, f.data, 0o600, excl); err != nil {
		return err
	}
	if err := os.Chmod(path, f.mode); err != nil {
		return err
	}
	return os.Chtimes(path, time.Time{}, f.mod)
}

// putStartFile puts one of Start's files, name, in node directory d with
// write (given the path to make and whether it must be new). The Start that
// claimed the node (first) makes it in place, where nothing is yet; where
// something is (another Start finished the node first) or when finishing a
// start, it is made beside and renamed over, whole.
func putStartFile(d, name string, first bool, write func(path string, excl bool) error) error {
	path := d + "/" + name
	if first {
		err := write(path, true)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	tmp := d + "/.start." + name + "." + strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(startTmps.Add(1), 10)
	if err := write(tmp, true); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// startTmps numbers the files putStartFile writes beside their place.
var startTmps atomic.Uint64

// claimed says whether an agent has claimed node directory d (or is about
// to record its pid there).
func claimed(d string) bool {
	return exists(d+"/"+agent.FilePID) || exists(d+"/"+agent.FileBegun) || exists(d+"/"+agent.FileServed)
}

type agentExitKey struct{}

// WithAgentExit returns ctx that makes a Start on this machine (a local
// node: StartHere) call exited once the agent it started has exited, its
// exit code written: the caller learns of the task's end at once, not at
// its next poll. Starts elsewhere, and agents that an earlier process
// started, are not seen, and are found by polling.
func WithAgentExit(ctx context.Context, exited func()) context.Context {
	return context.WithValue(ctx, agentExitKey{}, exited)
}

// startDeadline is how long a start waits for an agent: ctx's deadline,
// at most 5s.
func startDeadline(ctx context.Context) time.Time {
	deadline := time.Now().Add(5 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	return deadline
}

// waitClosed reads pr until every copy of its write end is closed (the
// program given it says it is ready, or died), by startDeadline.
func waitClosed(ctx context.Context, pr *os.File) {
	pr.SetReadDeadline(startDeadline(ctx))
	io.Copy(io.Discard, pr)
}

// startDetached starts the agent program prog with args, in a session of
// its own, in dir, with env, and its fd 3 the write end of a pipe whose
// read end it returns: the program closes fd 3 once it is ready, and the
// pipe's end is seen at once if it dies first (waitClosed).
func startDetached(prog string, args []string, dir string, env []string) (*exec.Cmd, *os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(prog, args...)
	// The liveness check knows the agent by this name, whatever the
	// program's file is called.
	cmd.Args[0] = agent.Program
	cmd.Dir = dir
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, nil, err
	}
	return cmd, pr, nil
}

// startAgent starts d's agent (in the agent server ctx names, see
// WithAgentServer, else as a program of its own in a session of its own)
// and returns once it has recorded its pid: the agent closes its fd 3, the
// write end of a pipe, when it has, and the pipe's end is seen at once if
// it dies first. vars are the Start script's (NOTICE, ENDPOINT, GRACE);
// link makes the node's agent link, which an agent of its own needs first.
func startAgent(ctx context.Context, prog, d string, env []string, vars map[string]string, link func() error) error {
	grace := vars["GRACE"]
	if grace == "" {
		grace = agent.DefaultGrace.String()
	}
	if sock, _ := ctx.Value(agentServerKey{}).(string); sock != "" {
		if handled, err := startServed(ctx, prog, sock, d, env, vars); handled {
			return err
		}
	}
	if err := link(); err != nil {
		return err
	}
	cmd, pr, err := startDetached(prog, []string{"run", "-ready-fd", "3", "-notice", vars["NOTICE"], "-notice-endpoint", vars["ENDPOINT"], "-grace", grace, d},
		d, append(env[:len(env):len(env)], "PWD="+d, DirEnv+"="+d))
	if err != nil {
		return err
	}
	defer pr.Close()
	// Reap the agent when it ends, while this process lives, and tell
	// whoever asked (WithAgentExit).
	exited, _ := ctx.Value(agentExitKey{}).(func())
	go func() {
		cmd.Wait()
		if exited != nil {
			exited()
		}
	}()
	waitClosed(ctx, pr)
	if claimed(d) {
		return nil
	}
	return fmt.Errorf("the node agent wrote no pid file within 5s; see %s", d)
}
