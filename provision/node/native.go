package node

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// AnswerHere answers a Poll or ReadLog request for a node directory on this
// machine by reading its files directly, with the very bytes the script
// would print, so that a provider whose nodes are local directories need not
// start bash (and the commands the scripts run) for the calls it gets most.
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
		return pollHere(dir)
	case OpReadLog:
		return readLogHere(dir, req.Vars["FROM"], req.Vars["MAX"])
	}
	return nil, false
}

// afterAliveCheck is called between pollHere's look at the wrapper and its
// read of the exit code: a test makes the wrapper end there.
var afterAliveCheck = func() {}

// pollHere does what pollBody does.
func pollHere(dir string) ([]byte, bool) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	// As the prelude's "cd -P": the wrapper's command line holds this path.
	d, err := filepath.EvalSymlinks(dir)
	if err != nil || strings.ContainsRune(d, '\n') {
		return nil, false
	}
	// Liveness first, as pollBody: a wrapper that writes its exit code and
	// exits between the two looks is seen alive, or with its code.
	alive := wrapperAliveHere(d)
	afterAliveCheck()
	var b bytes.Buffer
	if alive {
		b.WriteString("alive=1\n")
	}
	if exists(d+"/begun") || exists(d+"/pid") {
		b.WriteString("started=1\n")
	}
	for _, f := range [...]struct{ name, key string }{{"phase", "phase="}, {"exit_code", "exit="}} {
		if !isRegular(d + "/" + f.name) {
			continue
		}
		v, err := readHead(d+"/"+f.name, MaxStateValue+1) // as head -c does
		// The shell drops NUL bytes with a warning; leave that to it.
		if err != nil || bytes.IndexByte(v, 0) >= 0 {
			return nil, false
		}
		b.WriteString(f.key)
		b.Write(bytes.TrimRight(v, "\n")) // as $(cat ...) does
		b.WriteByte('\n')
	}
	if !isRegular(d + "/exit_code") {
		marker, ok := unwrittenMarker(d)
		if !ok {
			return nil, false
		}
		if marker != "" {
			b.WriteString("exit=" + strings.ReplaceAll(marker, ".", " ") + "\nunwritten=1\n")
		}
	}
	if isRegular(d + "/stop") {
		b.WriteString("stopped=1\n")
	}
	if isRegular(d + "/notice") {
		v, err := readHead(d+"/notice", 1024)
		if err != nil {
			return nil, false
		}
		b.WriteString("notice=")
		b.Write(bytes.ReplaceAll(v, []byte{'\n'}, nil)) // as tr -d '\n' does
		b.WriteByte('\n')
	}
	return b.Bytes(), true
}

// wrapperAliveHere is the prelude's wrapper_alive: the pid file names a
// process that exists, is not a zombie, and runs d's wrapper.sh.
func wrapperAliveHere(d string) bool {
	var b []byte
	if isRegular(d + "/pid") {
		var err error
		if b, err = os.ReadFile(d + "/pid"); err != nil {
			return false
		}
	} else {
		// recorded's fallback: the number in the name of pid.is.N.
		names, _ := filepath.Glob(d + "/pid.is.*")
		sort.Strings(names)
		for _, n := range names {
			if isRegular(n) {
				b = []byte(strings.TrimPrefix(n, d+"/pid.is.") + "\n")
				break
			}
		}
		if b == nil {
			return false
		}
	}
	// read -r fails on a line that no newline ends.
	line, _, found := bytes.Cut(b, []byte{'\n'})
	if !found {
		return false
	}
	pid, err := strconv.Atoi(strings.Trim(string(line), " \t"))
	if err != nil || pid <= 0 {
		// kill -0 refuses what is not a number; 0 and negative numbers
		// name groups, and /proc has no entry for them.
		return false
	}
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	if !isDir("/proc/self") {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	l, _, found := bytes.Cut(stat, []byte{'\n'})
	if !found {
		return false
	}
	// ${l##*) }: the command name, in parentheses, may hold both.
	if i := bytes.LastIndex(l, []byte(") ")); i >= 0 {
		l = l[i+2:]
	}
	fields := strings.Fields(string(l))
	if len(fields) > 0 {
		switch fields[0] {
		case "Z", "X", "x":
			return false
		}
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	// tr '\0' '\n' | grep -qxF: any whole line equal to the path.
	want := []byte(d + "/wrapper.sh")
	for _, arg := range bytes.FieldsFunc(cmdline, func(r rune) bool { return r == 0 || r == '\n' }) {
		if bytes.Equal(arg, want) {
			return true
		}
	}
	return false
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

// unwrittenMarker returns what follows "exit_code.unwritten." in the name
// of the one such regular file in d, "" when there is none; ok is false
// when the script's glob could answer otherwise (several, an odd name).
func unwrittenMarker(d string) (string, bool) {
	entries, err := os.ReadDir(d)
	if err != nil {
		return "", false
	}
	found := ""
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "exit_code.unwritten.")
		if !ok || !isRegular(d+"/"+e.Name()) {
			continue
		}
		if found != "" || rest == "" || strings.ContainsRune(rest, '\n') {
			return "", false
		}
		found = rest
	}
	return found, true
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

// readHead reads at most n bytes from the start of the file at path.
func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
