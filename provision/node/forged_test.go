package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision"
	"sortie/provision/node"
)

// A task can write over the files the agent keeps in its node directory.
// What it writes there never becomes an exit code outside 0-255, and never
// makes a poll fail.
func TestTaskCannotForgeItsExitCode(t *testing.T) {
	big := strings.Repeat("x", 70<<10)
	for _, tc := range []struct {
		name, run   string
		wantInvalid string // a part of Status.Invalid; "" for a valid code
		wantCode    int
	}{
		{"a code beyond 255", `printf 'run 99999999999' >"$SORTIE_NODE_DIR/x" && mv "$SORTIE_NODE_DIR/x" "$SORTIE_NODE_DIR/exit_code"; exit 0`, `"run 99999999999", whose code is not an exit code (0-255)`, 0},
		{"a negative code", `printf 'run -1' >"$SORTIE_NODE_DIR/x" && mv "$SORTIE_NODE_DIR/x" "$SORTIE_NODE_DIR/exit_code"`, `"run -1", whose code`, 0},
		{"a code with a sign", `printf 'run +7' >"$SORTIE_NODE_DIR/x" && mv "$SORTIE_NODE_DIR/x" "$SORTIE_NODE_DIR/exit_code"`, `"run +7", whose code`, 0},
		{"no phase", `printf '5' >"$SORTIE_NODE_DIR/x" && mv "$SORTIE_NODE_DIR/x" "$SORTIE_NODE_DIR/exit_code"`, `want "<setup|run> <code> <-|stop>"`, 0},
		{"a 70 KB exit code", `printf '%s' "` + big + `" >"$SORTIE_NODE_DIR/x" && mv "$SORTIE_NODE_DIR/x" "$SORTIE_NODE_DIR/exit_code"`, "longer than 64 bytes", 0},
		{"a valid code cut from a long file", `{ printf 'run 3'; head -c 100 /dev/zero | tr '\0' ' '; } >"$SORTIE_NODE_DIR/x" && mv "$SORTIE_NODE_DIR/x" "$SORTIE_NODE_DIR/exit_code"`, "longer than 64 bytes", 0},
		// The agent's own code stands when the task only filled the
		// phase file.
		{"a 70 KB phase", `printf '%s' "` + big + `" >"$SORTIE_NODE_DIR/phase"; exit 4`, "", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newNode(t)
			if err := node.Start(context.Background(), r, node.StartSpec{Run: tc.run}); err != nil {
				t.Fatal(err)
			}
			st := waitDone(t, r)
			if tc.wantInvalid == "" {
				if st.Invalid != "" || st.ExitCode != tc.wantCode || st.Phase != node.PhaseRun {
					t.Errorf("status %+v, want run exited %d", st, tc.wantCode)
				}
				return
			}
			if !strings.Contains(st.Invalid, tc.wantInvalid) {
				t.Errorf("Invalid = %q, want it to hold %q (status %+v)", st.Invalid, tc.wantInvalid, st)
			}
			if len(st.Invalid) > 200 {
				t.Errorf("Invalid is %d bytes long; the reason must stay short", len(st.Invalid))
			}
		})
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
