package node

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/provision/node/agent"
)

// recorder is a runner that runs nothing and keeps what it was asked.
type recorder struct {
	dir     string
	scripts []string
	stdins  [][]byte
	answer  []byte
}

func (r *recorder) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	r.scripts = append(r.scripts, script)
	var in []byte
	if stdin != nil {
		in, _ = io.ReadAll(stdin)
	}
	r.stdins = append(r.stdins, in)
	return r.answer, nil
}
func (r *recorder) Dir() string  { return r.dir }
func (r *recorder) Close() error { return nil }

func TestDecodeEveryOperation(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	dir := "/nodes/it's a\nnode"
	prog, err := findProgram()
	if err != nil {
		t.Fatal(err)
	}
	sum := prog.sum
	tests := []struct {
		name string
		call func(r *recorder) error
		want Request
	}{
		{"start", func(r *recorder) error {
			return Start(ctx, r, StartSpec{Run: "true", Workdir: "w d", NoticeSource: "gce-metadata", NoticeEndpoint: "http://127.0.0.1:1", TerminationGrace: 5 * time.Second})
		}, Request{Op: OpStart, Dir: dir, Vars: map[string]string{"W": "w d", "SUM": sum,
			"NOTICE": "gce-metadata", "ENDPOINT": "http://127.0.0.1:1", "GRACE": "5s", "SYNCSUM": "", "FUSE": ""}}},
		{"poll", func(r *recorder) error { _, err := Poll(ctx, r); return err },
			Request{Op: OpPoll, Dir: dir, Vars: map[string]string{}}},
		{"read log", func(r *recorder) error { _, err := ReadLog(ctx, r, 41); return err },
			Request{Op: OpReadLog, Dir: dir, Vars: map[string]string{"FROM": "42", "MAX": "4194304"}}},
		{"stop", func(r *recorder) error { return StopWithin(ctx, r, 0) },
			Request{Op: OpStop, Dir: dir, Vars: map[string]string{"TICKS": "1"}}},
		{"upload dir", func(r *recorder) error { return Upload(ctx, r, src, "workdir") },
			Request{Op: OpUpload, Dir: dir, Vars: map[string]string{"T": "workdir"}}},
		{"upload file", func(r *recorder) error { return Upload(ctx, r, filepath.Join(src, "f.txt"), "/etc/f") },
			Request{Op: OpUploadFile, Dir: dir, Vars: map[string]string{"T": "/etc/f", "MODE": "640"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{dir: dir}
			if err := tt.call(r); err != nil {
				t.Fatal(err)
			}
			if len(r.scripts) != 1 {
				t.Fatalf("%d scripts run, want 1", len(r.scripts))
			}
			got, ok := Decode(r.scripts[0])
			if !ok {
				t.Fatalf("Decode did not recognise the script:\n%s", r.scripts[0])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeRefusesOtherScripts(t *testing.T) {
	for _, s := range []string{
		"echo hello",
		"",
		script(pollBody, "D", "/x") + "rm -rf /\n",                // a known body with more after it
		"D=/x\n" + prelude + pollBody,                             // an unquoted value
		script(pollBody, "X", "/x"),                               // no node directory
		"D='/x\n" + prelude + pollBody,                            // an unterminated quote
		"echo hi\n" + script(pollBody, "D", "/x")[len("D='/x'"):], // not an assignment
	} {
		if req, ok := Decode(s); ok {
			t.Errorf("Decode(%q) = %+v, want not recognised", s, req)
		}
	}
}

func TestFormatStatusParsesBack(t *testing.T) {
	for _, st := range []Status{
		{},
		{Started: true, Phase: PhaseSetup, AgentAlive: true},
		{Started: true, Phase: PhaseRun, AgentAlive: true},
		{Started: true, Phase: PhaseRun, Done: true, ExitCode: 29},
		{Started: true, Phase: PhaseSetup, Done: true, ExitCode: 143, AgentAlive: true},
		{Started: true, Phase: PhaseRun},
		{Started: true, Phase: PhaseRun, Done: true, ExitCode: 143, Stopped: true, StopAsked: true},
		{Started: true, Phase: PhaseRun, Done: true, ExitCode: 0, StopAsked: true},
		{Started: true, Phase: PhaseRun, Done: true, ExitCode: 1, Unwritten: true},
		{Started: true, Phase: PhaseRun, AgentAlive: true, Notice: &agent.Notice{Kind: "spot-interruption", Source: "aws-imds",
			At: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC), Deadline: time.Date(2026, 11, 30, 11, 2, 0, 0, time.UTC)}},
		{Started: true, Phase: PhaseRun, AgentAlive: true, Notice: &agent.Notice{Kind: "rebalance", Source: "aws-imds",
			At: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)}},
	} {
		got, err := parseStatus(FormatStatus(st), nil)
		if err != nil {
			t.Fatalf("parse %+v: %v", st, err)
		}
		if diff := cmp.Diff(st, got); diff != "" {
			t.Errorf("FormatStatus(%+v) parses back (-want +got):\n%s", st, diff)
		}
	}
}

func TestStartFilesAndEnv(t *testing.T) {
	env := map[string]string{"A": "plain", "B": `it's "$quoted"`, "C": "two\nlines", "EMPTY": ""}
	r := &recorder{dir: "/n"}
	if err := Start(context.Background(), r, StartSpec{Setup: "echo s", Run: "echo r", Env: env}); err != nil {
		t.Fatal(err)
	}
	files, err := StartFiles(bytes.NewReader(r.stdins[0]))
	if err != nil {
		t.Fatal(err)
	}
	if string(files["run.sh"]) != "echo r" || string(files["setup.sh"]) != "echo s" || len(files) != 3 {
		t.Errorf("start files: run %q setup %q, %d files; want run.sh, setup.sh and env", files["run.sh"], files["setup.sh"], len(files))
	}
	got, err := ParseEnv(files["env"])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(env, got); diff != "" {
		t.Errorf("ParseEnv (-want +got):\n%s", diff)
	}
	if _, err := ParseEnv([]byte("A=1\n")); err == nil {
		t.Error("ParseEnv of a line without export: no error")
	}
}

// Whose code it is: a stop asked before the phase ended and Stop's signal
// make it sortie's; anything else is the task's own.
func TestWhoseExitCode(t *testing.T) {
	for _, tc := range []struct {
		out         string
		stopped     bool
		code        int
		wantProblem bool
	}{
		{"exit=run 143 stop\n", true, 143, false},
		{"exit=setup 137 stop\nstopped=1\n", true, 137, false},
		{"exit=run 29 stop\nstopped=1\n", false, 29, false}, // ended on its own as the stop came
		{"exit=run 143 -\nstopped=1\n", false, 143, false},  // ended before the stop was asked
		{"exit=run 0 -\nstopped=1\n", false, 0, false},
		{"exit=run 143\nstopped=1\n", true, 143, false}, // an older wrapper: the marker decides
		{"exit=run 3\nstopped=1\n", false, 3, false},
		{"exit=run 3 maybe\n", false, 0, true},
		{"exit=run 3 - x y\n", false, 0, true},
	} {
		st, err := parseStatus([]byte(tc.out), nil)
		if err != nil || (st.Invalid != "") != tc.wantProblem {
			t.Errorf("%q: error %v, problem %q, want one: %v", tc.out, err, st.Invalid, tc.wantProblem)
			continue
		}
		if !tc.wantProblem && (st.Stopped != tc.stopped || st.ExitCode != tc.code) {
			t.Errorf("%q: stopped %v code %d, want %v %d", tc.out, st.Stopped, st.ExitCode, tc.stopped, tc.code)
		}
	}
}

// A node's progress parses back; with the node's key only a record whose
// tag verifies counts (the task can write the record's file, not its tag).
func TestProgressParsesBackAndWantsItsTag(t *testing.T) {
	n := int64(41200)
	st := Status{Started: true, Phase: PhaseRun, AgentAlive: true, Progress: &n}
	key := bytes.Repeat([]byte{7}, agent.KeySize)
	for _, k := range [][]byte{nil, key} {
		got, err := parseStatus(FormatStatusKey(st, k), k)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st, got); diff != "" {
			t.Errorf("key %v: parses back (-want +got):\n%s", k != nil, diff)
		}
	}
	other := bytes.Repeat([]byte{8}, agent.KeySize)
	for _, out := range []string{
		"started=1\nprogress=41200\n",                                         // no tag
		"started=1\nprogress=41200 " + agent.ProgressTag(other, 41200) + "\n", // another node's
		"started=1\nprogress=41201 " + agent.ProgressTag(key, 41200) + "\n",   // another number's
		"started=1\nprogress=-1 " + agent.ProgressTag(key, -1) + "\n",
		"started=1\nprogress=many " + agent.ProgressTag(key, 0) + "\n",
	} {
		got, err := parseStatus([]byte(out), key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Progress != nil {
			t.Errorf("parseStatus(%q) progress = %d, want none", out, *got.Progress)
		}
	}
}
