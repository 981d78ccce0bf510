package smoke_tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sortie/controller/contract"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runWithin runs the binary like env.run, failing the test if it has not
// ended within d: what these tests guard against is a hang.
func (e *env) runWithin(d time.Duration, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Dir = e.dir
	cmd.Env = e.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		e.t.Fatalf("sortie %s did not end within %s", strings.Join(args, " "), d)
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		e.t.Fatalf("run sortie %v: %v", args, err)
	}
	return r
}

// TestHostileTaskFiles: /dev/zero grew memory without bound, a FIFO
// blocked forever, and two flow mappings on a line ran the first only.
// Each is refused as invalid input (exit 2), saying why and where.
func TestHostileTaskFiles(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(e.dir, "task.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	two := e.write("two.yaml", `{run: "echo first"} {run: "echo second"}`+"\n")
	bad := e.write("bad-utf8.yaml", "run: echo \xff\n")
	for _, tt := range []struct{ file, want string }{
		{"/dev/zero", "/dev/zero is a character device, not a regular file"},
		{fifo, "is a named pipe (FIFO), not a regular file"},
		{two, "line 1, column 21: something follows the end of the value"},
		{bad, "line 1, column 11: byte 0xff is not UTF-8"},
	} {
		r := e.runWithin(time.Minute, "jobs", "launch", "-d", tt.file)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("launch %s: exit %d, stderr %q; want exit 2 saying %q", tt.file, r.code, r.stderr, tt.want)
		}
	}
	if jobs := e.queue("-a"); len(jobs) != 0 {
		t.Errorf("%d jobs stored, want none", len(jobs))
	}
}

// TestHostileGitignoreDoesNotHangTheLaunch: a .gitignore of nested "**"
// patterns held up the input key (and so the launch) for minutes.
func TestHostileGitignoreDoesNotHangTheLaunch(t *testing.T) {
	e := newEnv(t)
	deep := strings.Repeat("a/", 30)
	e.write("proj/"+deep+"file.txt", "x\n")
	e.write("proj/.gitignore", strings.Repeat("**/a/", 14)+"b\n")
	f := e.write("task.yaml", "workdir: proj\nrun: cat "+deep+"file.txt\n")
	r := e.runWithin(time.Minute, "jobs", "launch", "-d", f)
	if r.code != 0 {
		t.Fatalf("launch: exit %d, %s", r.code, r.stderr)
	}
	id, _ := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
	e.waitStatus(id, "SUCCEEDED")
}

// TestHostileNamesArePrintedEscaped: ANSI escapes and newlines in a name
// went raw into jobs queue and jobs show; -o json keeps the name exact.
func TestHostileNamesArePrintedEscaped(t *testing.T) {
	e := newEnv(t)
	name := "evil\x1b[2J\nID  fake\t\u202e"
	f := e.write("task.yaml", "name: "+strconv.Quote(name)+"\nrun: echo hi\n")
	id := e.launch(f)
	e.waitStatus(id, "SUCCEEDED")
	for _, args := range [][]string{{"jobs", "queue"}, {"jobs", "show", strconv.FormatInt(id, 10)}} {
		r := e.must(args...)
		out := r.stdout + r.stderr
		if strings.ContainsAny(out, "\x1b\t\u202e") || strings.Contains(out, "\nID  fake") {
			t.Errorf("%s printed control characters raw:\n%q", strings.Join(args, " "), out)
		}
		if !strings.Contains(out, `evil\x1b[2J\nID  fake\t\u202e`) {
			t.Errorf("%s does not show the name escaped:\n%s", strings.Join(args, " "), out)
		}
	}
	if got := e.show(id).Name; got != name {
		t.Errorf("-o json name %q; want %q", got, name)
	}
}

// TestHostileOverrides: a secret's value in a bad --set was echoed, a
// quoted --set or --env value with more after it was cut short (--set now
// refuses it, --env keeps it as written), --set name=X left
// the old name, bytes that are not UTF-8 became U+FFFD, .inf gave a JSON
// error naming no field, and a big number went through a float.
func TestHostileOverrides(t *testing.T) {
	e := newEnv(t)
	seen := filepath.Join(e.dir, "seen")
	f := e.write("task.yaml", "name: first\nenvs: {BIG: 12345678901234567890123}\nrun: echo \"$BIG\" > "+seen+"\n")
	id := e.launch(f)
	e.waitStatus(id, "SUCCEEDED")
	if b, _ := os.ReadFile(seen); strings.TrimSpace(string(b)) != "12345678901234567890123" {
		t.Errorf("the task saw BIG=%q; want the digits as written", b)
	}
	sid := strconv.FormatInt(id, 10)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "retry", sid, "--reason", "r", "--set", "secrets.TOKEN=[hunter2"}, "secrets.TOKEN: is not a YAML value (a secret's value is never shown)"},
		{[]string{"jobs", "retry", sid, "--reason", "r", "--set", "envs.A=a\xffb"}, "envs.A: holds a byte that is not UTF-8 (0xff at byte 2 of the value)"},
		{[]string{"jobs", "retry", sid, "--reason", "r", "--set", "resources.cpus=.inf"}, `resources.cpus: ".inf" is not an amount`},
		{[]string{"jobs", "retry", sid, "--reason", "r", "--set", `envs.A="a" "b"`}, "line 1, column 5: something follows the end of the value"},
		{[]string{"jobs", "launch", "-d", f, "--env", "A=a\xffb"}, "holds a byte that is not UTF-8"},
	} {
		r := e.run(tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, "hunter2") {
			t.Errorf("sortie %q: exit %d, stderr %q; want exit 2 saying %q, no secret", tt.args, r.code, r.stderr, tt.want)
		}
	}
	// --env takes its value as written, quotes and all.
	quoted := filepath.Join(e.dir, "quoted")
	g := e.write("quoted.yaml", "run: printf '%s' \"$A\" > "+quoted+"\n")
	e.waitStatus(e.launch(g, "--env", `A="a" "b"`), "SUCCEEDED")
	if b, _ := os.ReadFile(quoted); string(b) != `"a" "b"` {
		t.Errorf("--env A='\"a\" \"b\"' reached the task as %q; want it as written", b)
	}
	r := e.must("jobs", "retry", sid, "--reason", "rename", "--set", "name=second", "-o", "json")
	var res []contract.RetryResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 {
		t.Fatalf("retry -o json: %v\n%s", err, r.stdout)
	}
	if res[0].Retry.Name != "second" {
		t.Errorf("the retry is named %q; want second", res[0].Retry.Name)
	}
	if got := e.show(res[0].Retry.ID).Name; got != "second" {
		t.Errorf("jobs show names the retry %q; want second", got)
	}
}
