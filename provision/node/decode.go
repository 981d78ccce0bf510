package node

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sortie/provision/node/agent"
)

// Op names one of the scripts this package asks a runner to run.
type Op string

// The operations, one per script.
const (
	OpStart      Op = "start"       // Start; stdin is the node's key (a line of hex, empty for none), then a tar of the task's files (StartInput); vars W, SUM, NOTICE, ENDPOINT, GRACE, SYNCSUM
	OpInstall    Op = "install"     // Start's copy of a program (the agent, the sync program); stdin is the program, vars SUM and NAME
	OpPoll       Op = "poll"        // Poll; answer with FormatStatus
	OpReadLog    Op = "read-log"    // ReadLog; vars FROM (1-based byte) and MAX
	OpStop       Op = "stop"        // Stop and StopWithin; var TICKS
	OpUpload     Op = "upload"      // Upload of a directory; stdin is a tar, var T
	OpUploadFile Op = "upload-file" // Upload of one file; stdin is its bytes, vars T and MODE
	OpEngine     Op = "engine"      // ContainerEngine; answer with the engine's command
	OpClone      Op = "clone"       // Clone; vars T, URL and REF
)

// bodies maps each script body to its operation.
var bodies = map[string]Op{
	startBody:        OpStart,
	installAgentBody: OpInstall,
	pollBody:         OpPoll,
	readLogBody:      OpReadLog,
	stopBody:         OpStop,
	uploadBody:       OpUpload,
	uploadFileBody:   OpUploadFile,
	engineBody:       OpEngine,
	cloneBody:        OpClone,
}

// Request is a script built by this package, read back: which operation,
// on which node directory, with which arguments. A runner of hollow nodes,
// which run no commands, answers Requests instead of running bash, so the
// controller drives it through the very same calls as a real node.
type Request struct {
	Op  Op
	Dir string // the node directory the script works in ($D)
	// Vars are the script's other arguments by name (see the Op constants).
	Vars map[string]string
}

// Decode reads back a script this package built; ok is false for any other
// script.
func Decode(script string) (req Request, ok bool) {
	i := strings.Index(script, prelude)
	if i < 0 {
		return Request{}, false
	}
	op, ok := bodies[script[i+len(prelude):]]
	if !ok {
		return Request{}, false
	}
	vars, ok := parseAssignments(script[:i])
	if !ok {
		return Request{}, false
	}
	dir, ok := vars["D"]
	if !ok {
		return Request{}, false
	}
	delete(vars, "D")
	return Request{Op: op, Dir: dir, Vars: vars}, true
}

// parseAssignments reads the NAME='value' lines script writes, undoing quote.
func parseAssignments(s string) (map[string]string, bool) {
	vars := map[string]string{}
	for s != "" {
		name, rest, ok := strings.Cut(s, "=")
		if !ok || !IsEnvKey(name) {
			return nil, false
		}
		val, rest, ok := unquoteWord(rest)
		if !ok || !strings.HasPrefix(rest, "\n") {
			return nil, false
		}
		vars[name] = val
		s = rest[1:]
	}
	return vars, true
}

// unquoteWord reads one word written by quote from the start of s and
// returns its value and what follows it.
func unquoteWord(s string) (val, rest string, ok bool) {
	var b strings.Builder
	for {
		switch {
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		default:
			return b.String(), s, b.Len() > 0 || strings.HasPrefix(s, "\n")
		}
	}
}

// FormatStatus renders st exactly as the Poll script prints it, so that a
// hollow node's answer parses back to st. Stopped is written as a stop that
// came before the end, which parses back to Stopped only with a code of 143
// or 137, as a real node's would.
func FormatStatus(st Status) []byte {
	return FormatStatusKey(st, nil)
}

// FormatStatusKey is FormatStatus for a node whose key is key: its exit
// code carries the tag the agent writes with it.
func FormatStatusKey(st Status, key []byte) []byte {
	var b bytes.Buffer
	if st.Started {
		b.WriteString("started=1\n")
	}
	if st.Phase != "" {
		fmt.Fprintf(&b, "phase=%s\n", st.Phase)
	}
	if st.Done {
		how := "-"
		if st.Stopped {
			how = "stop"
		}
		tag := ""
		if key != nil {
			tag = " " + agent.Tag(key, st.Phase, st.ExitCode, how)
		}
		fmt.Fprintf(&b, "exit=%s %d %s%s\n", st.Phase, st.ExitCode, how, tag)
		if st.Unwritten {
			b.WriteString("unwritten=1\n")
		}
	}
	if st.StopAsked {
		b.WriteString("stopped=1\n")
	}
	if st.AgentAlive {
		b.WriteString("alive=1\n")
	}
	if st.AgentLost {
		b.WriteString("lost=1\n")
	}
	if st.Notice != nil {
		line, _ := json.Marshal(st.Notice)
		fmt.Fprintf(&b, "notice=%s\n", line)
	}
	if st.Storage != nil {
		line, _ := json.Marshal(st.Storage)
		fmt.Fprintf(&b, "storage=%s\n", line)
	}
	if st.Progress != nil {
		tag := ""
		if key != nil {
			tag = " " + agent.ProgressTag(key, *st.Progress)
		}
		fmt.Fprintf(&b, "progress=%d%s\n", *st.Progress, tag)
	}
	return b.Bytes()
}

// StartFiles reads Start's stdin: the task's files by name ("env",
// "run.sh", and "setup.sh" when the task has a setup).
func StartFiles(stdin io.Reader) (map[string][]byte, error) {
	_, files, err := StartInput(stdin)
	return files, err
}

// StartInput reads Start's stdin: the node's key (nil when it has none),
// then the task's files by name, as StartFiles.
func StartInput(stdin io.Reader) ([]byte, map[string][]byte, error) {
	br := bufio.NewReader(stdin)
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, nil, fmt.Errorf("read start payload: the key's line: %w", err)
	}
	var key []byte
	if line != "\n" {
		if key, err = hex.DecodeString(strings.TrimSuffix(line, "\n")); err != nil {
			return nil, nil, fmt.Errorf("read start payload: the key's line: %w", err)
		}
	}
	files, err := startFiles(br)
	return key, files, err
}

func startFiles(stdin io.Reader) (map[string][]byte, error) {
	out := map[string][]byte{}
	tr := tar.NewReader(stdin)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read start payload: %w", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read start payload %s: %w", h.Name, err)
		}
		out[h.Name] = b
	}
}

// ParseEnv reads back the env file Start writes ("export K='v'" lines).
func ParseEnv(b []byte) (map[string]string, error) {
	out := map[string]string{}
	s := string(b)
	for s != "" {
		line, ok := strings.CutPrefix(s, "export ")
		if !ok {
			return nil, fmt.Errorf("env file: line %q does not start with \"export \"", firstLine(s))
		}
		name, rest, ok := strings.Cut(line, "=")
		if !ok || !IsEnvKey(name) {
			return nil, fmt.Errorf("env file: line %q is not export NAME=VALUE", firstLine(s))
		}
		val, rest, ok := unquoteWord(rest)
		if !ok || !strings.HasPrefix(rest, "\n") {
			return nil, fmt.Errorf("env file: the value of %s is not one quoted word", name)
		}
		out[name] = val
		s = rest[1:]
	}
	return out, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
