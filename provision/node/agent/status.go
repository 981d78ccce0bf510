package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// MaxStateValue bounds what Answer reads of the phase and exit_code files,
// which the task itself can write over: it reads one byte more, so that a
// longer file is seen as too long instead of being cut into a valid value.
const MaxStateValue = 128

// maxNotice bounds what Answer reads of the notice file.
const maxNotice = 1024

// Answer is the node's state, in the lines the controller parses, one
// "key=value" a line:
//
//	alive=1    the agent runs
//	started=1  an agent began on the node (begun or pid exists)
//	lost=1     the agent recorded its pid and is gone without an exit code
//	phase=P    the phase file's content (at most MaxStateValue+1 bytes)
//	exit=...   record/exit_code's content, or an unwritten marker's name, dots as spaces
//	           (one line per marker, at most maxMarkers)
//	unwritten=1  the exit code is only in the marker's name
//	stopped=1  a stop was asked
//	notice=J   the notice file, one JSON line
//	storage=J  what the bucket syncs did, one JSON list of MountSync
//	progress=N [tag]  record/progress's content: the highest progress the agent read
//
// A directory that does not exist is an empty answer. Liveness is looked at
// first: an agent that writes its exit code and exits between the two looks
// is seen alive, or with its code, never gone without one.
func Answer(dir string) ([]byte, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// The files are read through dir as given; AgentAlive resolves it
	// where it must (an agent of the node's own has the real path among
	// its arguments).
	d := dir
	pid := RecordedPID(d)
	alive := pid > 0 && AgentAlive(d, pid)
	afterAliveCheck()
	var b bytes.Buffer
	if alive {
		b.WriteString("alive=1\n")
	}
	if exists(d+"/"+FileBegun) || pid > 0 {
		b.WriteString("started=1\n")
	}
	done := false
	for _, f := range [...]struct{ name, key string }{{FilePhase, "phase="}, {RecordDir + "/" + FileExitCode, "exit="}} {
		if !isRegular(d + "/" + f.name) {
			if f.name == FilePhase {
				// The phase is the last one whose group the agent
				// recorded (an agent before this one wrote it down).
				if p := recordedPhase(d); p != "" {
					b.WriteString("phase=" + p + "\n")
				}
			}
			continue
		}
		v, err := readHead(d+"/"+f.name, MaxStateValue+1)
		if err != nil {
			return nil, err
		}
		v = bytes.TrimRight(v, "\n")
		// A line of its own: whatever the task wrote there.
		v = bytes.ReplaceAll(v, []byte{'\n'}, []byte{' '})
		b.WriteString(f.key)
		b.Write(v)
		b.WriteByte('\n')
		done = done || f.key == "exit="
	}
	if !done {
		// Every marker: the task may have made some, and only the reader,
		// who has the key, can tell the agent's.
		for _, marker := range unwrittenMarkers(d + "/" + RecordDir) {
			b.WriteString("exit=" + strings.ReplaceAll(marker, ".", " ") + "\n")
			done = true
		}
		if done {
			b.WriteString("unwritten=1\n")
		}
	}
	if !alive && !done && pid > 0 {
		b.WriteString("lost=1\n")
	}
	if isRegular(d + "/" + RecordDir + "/" + FileProgress) {
		if v, err := readHead(d+"/"+RecordDir+"/"+FileProgress, MaxStateValue+1); err == nil {
			v = bytes.TrimRight(v, "\n")
			b.WriteString("progress=")
			b.Write(bytes.ReplaceAll(v, []byte{'\n'}, []byte{' '}))
			b.WriteByte('\n')
		}
	}
	if isRegular(d + "/" + FileStop) {
		b.WriteString("stopped=1\n")
	}
	if v, err := readHead(d+"/"+FileNotice, maxNotice); err == nil {
		var n Notice
		if json.Unmarshal(v, &n) == nil {
			line, _ := json.Marshal(n)
			b.WriteString("notice=")
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	if v, err := readHead(d+"/"+FileStorageState, maxStorageState); err == nil {
		var ms []MountSync
		if json.Unmarshal(v, &ms) == nil {
			line, _ := json.Marshal(ms)
			b.WriteString("storage=")
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// recordedPhase is the phase whose process group the agent recorded last
// in d: run once run began, else setup once setup began, else "".
func recordedPhase(d string) string {
	for _, p := range [...]string{PhaseRun, PhaseSetup} {
		if ReadPID(filepath.Join(d, "pgid."+p)) > 0 {
			return p
		}
	}
	return ""
}

// afterAliveCheck is called between Answer's look at the agent and its read
// of the exit code: a test makes the agent end there.
var afterAliveCheck = func() {}

// RecordedPID returns the pid the agent recorded in dir, from pid or from
// the name of pid.is.N; 0 when there is none.
func RecordedPID(dir string) int {
	return ReadPID(filepath.Join(dir, FilePID))
}

// Reaped says whether the agent of node directory dir said that none of
// its task's processes is left (the reaped file).
func Reaped(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, FileReaped))
	return err == nil
}

// ReadPID reads a process id the agent recorded at path (or in the name of
// path.is.N); 0 when there is none, or it is not a number above 1.
func ReadPID(path string) int {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		names, _ := filepath.Glob(path + ".is.*")
		if len(names) == 0 {
			return 0
		}
		sort.Strings(names)
		b, err = []byte(strings.TrimPrefix(names[0], path+".is.")), nil
	}
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 1 {
		return 0
	}
	return n
}

// AgentAlive says whether pid is the agent of node directory d: it exists,
// is not a zombie (a machine whose init does not reap keeps those), and its
// command line is the agent program's with d as an argument, so that a pid
// reused by another program is not taken for the agent.
func AgentAlive(d string, pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	p := "/proc/" + strconv.Itoa(pid)
	if _, err := os.Stat("/proc/self"); err != nil {
		return true // no /proc to look further
	}
	stat, err := os.ReadFile(p + "/stat")
	if err != nil {
		return false
	}
	if i := bytes.LastIndex(stat, []byte(") ")); i >= 0 {
		stat = stat[i+2:]
	}
	if fields := strings.Fields(string(stat)); len(fields) > 0 {
		switch fields[0] {
		case "Z", "X", "x":
			return false
		}
	}
	cmdline, err := os.ReadFile(p + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(args) < 2 || filepath.Base(args[0]) != Program {
		return false
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	return slices.Contains(args[1:], d)
}

// maxMarkers bounds the unwritten markers Answer reports.
const maxMarkers = 8

// unwrittenMarkers returns what follows UnwrittenPrefix in the names of the
// first maxMarkers such regular files in d.
func unwrittenMarkers(d string) []string {
	entries, err := os.ReadDir(d)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), UnwrittenPrefix)
		if ok && rest != "" && len(rest) <= MaxStateValue && !strings.ContainsRune(rest, '\n') && isRegular(d+"/"+e.Name()) {
			out = append(out, rest)
			if len(out) == maxMarkers {
				break
			}
		}
	}
	return out
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
