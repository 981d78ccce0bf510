package node

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sortie/provision/node/agent"
)

// AnswerHere answers a Poll or ReadLog request for a node directory on this
// machine by reading its files directly, with the very bytes the script
// would print, so that a provider whose nodes are local directories need not
// start bash (and the programs the scripts run) for the calls it gets most.
// ok is false for any other operation, and whenever the answer could differ
// from the script's in some corner (an odd directory name, a file that
// cannot be read): the caller then runs the script.
func AnswerHere(req Request) (out []byte, ok bool) {
	dir := req.Dir
	// The scripts resolve $D with the shell; a path the shell could read
	// differently (relative, unclean, holding a newline) goes to the shell.
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || strings.ContainsRune(dir, '\n') {
		return nil, false
	}
	switch req.Op {
	case OpPoll:
		// What the script's agent status prints; a node whose start did
		// not link its agent has not started, as the script says, unless
		// an agent server runs it (such a node has no link).
		if !isDir(dir) {
			return nil, true
		}
		// Lstat: the answer needs no program, and a rebuilt or removed
		// one must not make a running node look unstarted.
		if _, err := os.Lstat(dir + "/" + agent.FileAgent); err != nil && !exists(dir+"/"+agent.FileServed) {
			return nil, true
		}
		out, err := agent.Answer(dir)
		return out, err == nil
	case OpReadLog:
		return readLogHere(dir, req.Vars["FROM"], req.Vars["MAX"])
	}
	return nil, false
}

// readLogHere does what readLogBody does: at most max bytes of the log from
// the 1-based byte from on.
func readLogHere(dir, fromVar, maxVar string) ([]byte, bool) {
	from, err1 := strconv.ParseInt(fromVar, 10, 64)
	limit, err2 := strconv.ParseInt(maxVar, 10, 64)
	if err1 != nil || err2 != nil || from < 1 || limit < 0 {
		return nil, false
	}
	path := dir + "/log"
	if !isRegular(path) {
		return nil, true
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if _, err := f.Seek(from-1, io.SeekStart); err != nil {
		return nil, false
	}
	out, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, false
	}
	return out, true
}

// exists is test -e: true for anything there, following symlinks.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// isDir is test -d: true for a directory, or a symlink to one.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// isRegular is test -f: true for a regular file, or a symlink to one.
func isRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
