package node_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/node"
	"sortie/provision/node/agent"
)

// A task can write over the files the agent keeps in its node directory.
// What it writes where the exit code is recorded (the working directory's
// parent, the record directory) is replaced by the agent's own record when
// the task ends: it never becomes an exit code, and never makes a poll
// fail. With a key it is never taken; without one (an attempt from before
// keys) only while the task runs, so the test reads it once the agent is
// gone.
func TestTaskCannotForgeItsExitCode(t *testing.T) {
	big := strings.Repeat("x", 70<<10)
	forge := func(content string) string {
		return `mkdir -p "$SORTIE_NODE_DIR/record"
for f in "$SORTIE_NODE_DIR/exit_code" "$SORTIE_NODE_DIR/record/exit_code"; do
	printf '%s' "` + content + `" >"$f.x" && mv "$f.x" "$f"
done
exit 4`
	}
	for _, tc := range []struct{ name, run string }{
		{"a code beyond 255", forge("run 99999999999")},
		{"a negative code", forge("run -1")},
		{"a code with a sign", forge("run +7")},
		{"no phase", forge("5")},
		{"a success", forge("run 0 -")},
		{"a listed code", forge("run 29 -")},
		{"a 70 KB exit code", forge(big)},
		{"a 70 KB phase", `printf '%s' "` + big + `" >"$SORTIE_NODE_DIR/phase"; exit 4`},
	} {
		for _, keyed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/keyed=%v", tc.name, keyed), func(t *testing.T) {
				var r provision.Runner = newNode(t)
				if keyed {
					r = keyedNode(t)
				}
				if err := node.Start(context.Background(), r, node.StartSpec{Run: tc.run}); err != nil {
					t.Fatal(err)
				}
				st := waitDone(t, r)
				for deadline := time.Now().Add(15 * time.Second); st.AgentAlive && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
					st = waitDone(t, r)
				}
				if st.Invalid != "" || st.ExitCode != 4 || st.Phase != node.PhaseRun {
					t.Errorf("status %+v, want run exited 4", st)
				}
			})
		}
	}
}

// testKey is a node's key in the tests.
var testKey = bytes.Repeat([]byte{7}, 32)

// keyedNode is newNode reached with a node's key, as the controller
// reaches every node of an attempt.
func keyedNode(t *testing.T) provision.Runner {
	r := newNode(t)
	k := node.ForAttemptKey(bashRunner{dir: filepath.Dir(r.dir)}, 0, testKey)
	// The attempt's own directory is not newNode's: its processes are
	// ended before the test's directory is removed.
	t.Cleanup(func() { killMarked(t, k.Dir()) })
	return k
}

// A record in the agent's place whose tag does not verify is no exit code
// while the agent lives: a task that writes "run 0 -" there and goes on
// running is still running, and its own exit code is the one taken.
func TestForgedRecordIsNotTaken(t *testing.T) {
	r := keyedNode(t)
	goOn := filepath.Join(t.TempDir(), "go-on")
	run := `mkdir -p "$SORTIE_NODE_DIR/record"
printf 'run 0 -\n' > ../exit_code
printf 'run 0 -\n' > "$SORTIE_NODE_DIR/record/exit_code"
touch "$SORTIE_NODE_DIR/record/exit_code.unwritten.run.0.-"
printf 'run 0 - %s\n' "$(printf '0%.0s' $(seq 64))" > "$SORTIE_NODE_DIR/record/exit_code.x"
mv "$SORTIE_NODE_DIR/record/exit_code.x" "$SORTIE_NODE_DIR/record/exit_code"
touch "$SORTIE_NODE_DIR/forged"
while [ ! -e ` + node.Quote(goOn) + ` ]; do sleep 0.01; done
exit 3`
	if err := node.Start(context.Background(), r, node.StartSpec{Run: run}); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(r.Dir(), "forged"))
	st, err := node.Poll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Done || !st.AgentAlive || st.Phase != node.PhaseRun {
		t.Fatalf("status %+v with a forged record, want the task still running", st)
	}
	if err := os.WriteFile(goOn, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st = waitDone(t, r)
	if st.Invalid != "" || st.ExitCode != 3 || st.Phase != node.PhaseRun || st.Unwritten {
		t.Errorf("status %+v, want run exited 3", st)
	}
	// Read without the key, the agent's record is the same code.
	if st, err := node.Poll(context.Background(), node.ForAttempt(bashRunner{dir: filepath.Dir(r.Dir())}, 0)); err != nil || st.ExitCode != 3 {
		t.Errorf("status without the key %+v (%v), want run exited 3", st, err)
	}
}

// A task that kills its agent (it runs as the same user) and leaves a
// record of its own is not taken at its word: the code is unknown, and
// the reason says the record is not the agent's.
func TestForgedRecordOfADeadAgentIsInvalid(t *testing.T) {
	r := keyedNode(t)
	run := `mkdir -p "$SORTIE_NODE_DIR/record"
printf 'run 0 -\n' > "$SORTIE_NODE_DIR/record/exit_code"
kill -9 $(cat "$SORTIE_NODE_DIR/pid")
exit 0`
	if err := node.Start(context.Background(), r, node.StartSpec{Run: run}); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, r)
	if !strings.Contains(st.Invalid, "not written by the node agent") || st.AgentAlive {
		t.Errorf("status %+v, want a record the agent did not write", st)
	}
}

// A phase file holding something that is no phase is not reported as one.
func TestPollIgnoresAPhaseThatIsNone(t *testing.T) {
	r := newNode(t)
	if err := os.MkdirAll(filepath.Join(r.Dir(), "begun"), 0o755); err != nil {
		t.Fatal(err)
	}
	prog, err := node.AgentProgram()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(prog, filepath.Join(r.Dir(), "agent")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir(), "phase"), []byte("evil\x1b[2J\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := node.Poll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != "" || !st.Started {
		t.Errorf("status %+v, want started with no phase", st)
	}
}

// Start and upload errors that no retry can fix say so, so that the
// controller ends the job FAILED_PRECHECKS instead of recovering forever.
func TestPermanentStartErrorsAreClassified(t *testing.T) {
	ctx := context.Background()
	r := newNode(t)
	src := t.TempDir()
	for name, err := range map[string]error{
		"a path leaving the node directory": node.Upload(ctx, r, src, "../x"),
		"a mount from /dev/null":            node.Upload(ctx, r, "/dev/null", "/tmp/x"),
		"an env value with a NUL byte":      node.Start(ctx, r, node.StartSpec{Run: "true", Env: map[string]string{"A": "x\x00"}}),
	} {
		if provision.Classify(err) != provision.ClassPrechecks {
			t.Errorf("%s: %v is %s, want prechecks", name, err, provision.Classify(err))
		}
	}
}

// The agent of a keyed node tags its record with the node's key, which it
// got on its stdin: the key is in no file of the node directory, not in
// the task's environment, and not on the agent's command line.
func TestKeyStaysWithTheAgent(t *testing.T) {
	r := keyedNode(t)
	out := filepath.Join(t.TempDir(), "seen")
	run := `{
	echo "env:"; env
	p=$(cat "$SORTIE_NODE_DIR/pid")
	echo "argv:"; tr '\0' ' ' <"/proc/$p/cmdline"; echo
	echo "parent argv:"; for q in /proc/[0-9]*; do tr '\0' ' ' <"$q/cmdline" 2>/dev/null; echo; done
} >` + node.Quote(out) + ` 2>&1`
	if err := node.Start(context.Background(), r, node.StartSpec{Run: run}); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, r)
	if st.Invalid != "" || st.ExitCode != 0 {
		t.Fatalf("status %+v, want run exited 0", st)
	}
	rec, err := os.ReadFile(filepath.Join(r.Dir(), "record", "exit_code"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "run 0 - " + agent.Tag(testKey, "run", 0, "-") + "\n"; string(rec) != want {
		t.Errorf("record %q, want %q", rec, want)
	}
	seen, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(seen), "sortie-agent run -key-stdin") {
		t.Errorf("the task did not see the agent's command line:\n%s", seen)
	}
	hexKey := hex.EncodeToString(testKey)
	if strings.Contains(string(seen), hexKey) || bytes.Contains(seen, testKey) {
		t.Errorf("the key is in the task's environment or a command line:\n%s", seen)
	}
	filepath.WalkDir(r.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(hexKey)) || bytes.Contains(b, testKey) {
			t.Errorf("the key is in %s", p)
		}
		return nil
	})
}
