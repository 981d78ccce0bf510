// Package agent is the node agent, the program sortie starts detached on
// every node of a running task (cmd/sortie-agent): it runs the task's setup
// and run phases as process groups of their own, writes each phase's exit
// code durably, stops the task on a preemption notice, and answers the
// controller's questions about the node in one call (Answer).
//
// It keeps everything in the node directory, which outlives it:
//
//	env cwd setup.sh run.sh  written by Start before the agent begins (no cwd: the task
//	                         runs in workdir, DefaultWorkdir)
//	container.sh             runs a phase in the task's container image, when it has one
//	agent                    a symlink to the agent program this node runs
//	begun                    made first (O_EXCL) by the agent that owns the node
//	pid                      the agent's pid (its own session and group)
//	pgid.setup pgid.run      each phase's process group, once the phase runs: the last one
//	                         is the current phase (an agent before this one also wrote it
//	                         in phase, which Answer still reads first)
//	pid.is.N pgid.<phase>.is.N the same, when the disk had no room for the file's bytes
//	log                      stdout and stderr of both phases, and the agent's own words
//	record/exit_code         "<phase> <code> <-|stop> [tag]", written once the task has ended,
//	                         durably, over whatever the task wrote there; the tag is the
//	                         record's Tag under the key the agent got at start (Key)
//	record/exit_code.unwritten.<phase>.<code>.<-|stop>[.tag]  the same, when exit_code could
//	                         not be written
//	                         (record is a directory of its own, not the working directory's
//	                         parent, where a task that writes ../exit_code writes)
//	stop                     asks the agent not to begin another phase
//	notice                   the last preemption notice the agent heard, as JSON, durably
//	storage.json storage.env sync  the task's buckets, the sync program's own env, and a
//	                         link to the sync program (sortie-sync), when the task has buckets
//	storage-state            what the bucket syncs did, per mount (written by sortie-sync)
//	reaped                   no process of the task is left: made after the exit code, once the
//	                         agent (the subreaper of the task's processes) has ended what the task left
//
// It imports the standard library only, and must not import
// sortie/controller/..., sortie/provision, sortie/schema, net/http or anything
// from github.com or cloud.google.com: the agent is a small static program
// copied to every node. The controller's side links it too (Answer, the file
// names), and cmd/sortie-agent adds the notice package's watchers.
package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Names of the node directory's files (see the package comment).
const (
	FileEnv      = "env"
	FileCwd      = "cwd"
	FileAgent    = "agent"
	FileBegun    = "begun"
	FilePID      = "pid"
	FilePhase    = "phase"
	FileLog      = "log"
	FileExitCode = "exit_code" // in RecordDir
	// RecordDir is the directory of the node directory where the agent
	// keeps its record of the task's end (FileExitCode).
	RecordDir     = "record"
	FileStop      = "stop"
	FileNotice    = "notice"
	FileContainer = "container.sh"
	FileReaped    = "reaped"
	// UnwrittenPrefix starts the name of the marker that carries the exit
	// code when exit_code could not be written.
	UnwrittenPrefix = "exit_code.unwritten."
)

// Phases of a task, as recorded in phase and exit_code.
const (
	PhaseSetup = "setup"
	PhaseRun   = "run"
)

// DefaultWorkdir is where in the node directory the task runs when it has
// no workdir of its own (and the node no cwd file).
const DefaultWorkdir = "workdir"

// DirEnv is set, to the node directory, in the environment of the agent's
// phases, so that a provider running nodes on its own machine can find all of
// a node's processes, even those that left their process group.
const DirEnv = "SORTIE_NODE_DIR"

// HomeEnv is set, to the HOME of the node's phases, in the environment of
// the sync program, whose own HOME may be another (on local, the
// controller's, for the stores' shared credential files): a bucket's ~/
// destination is in the node's HOME.
const HomeEnv = "SORTIE_NODE_HOME"

// Program is the agent program's file name; the liveness check looks for it
// in the agent's command line.
const Program = "sortie-agent"

// putDurable writes a small file so that readers see the old content or the
// new, never a part of it, and the new content survives a crash of the
// node: written to a temporary file, synced, renamed over, and the directory
// synced.
func putDurable(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// mark records a process id in name, atomically but not durably: a pid
// means nothing once the node restarts, and a file a crash left empty or
// missing reads as no process, which is then the truth. With no room for
// the bytes (a full disk) an empty file, which needs none, carries the
// number in its name (name.is.N): a live agent whose pid could not be
// written must not be taken for a dead one.
func mark(dir, name string, n int) error {
	tmp := filepath.Join(dir, name+".tmp")
	err := os.WriteFile(tmp, []byte(strconv.Itoa(n)+"\n"), 0o644)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err == nil {
		return nil
	}
	os.Remove(tmp)
	f, ferr := os.OpenFile(filepath.Join(dir, name+".is."+strconv.Itoa(n)), os.O_WRONLY|os.O_CREATE, 0o644)
	if ferr != nil {
		return fmt.Errorf("record %s %d: %w (and as a marker: %v)", name, n, err, ferr)
	}
	return f.Close()
}

// claim makes the empty file begun, which only the first agent can; an
// empty file needs no data block, so a full disk does not stop the claim.
func claim(dir string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, FileBegun), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, f.Close()
}

// exists is test -e.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// isRegular is test -f.
func isRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
