package node

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/provision/node/agent"
)

// runScript runs a script as a runner of this machine would.
func runScript(t *testing.T, s string) []byte {
	t.Helper()
	cmd := exec.Command("bash", "-c", s)
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	return out
}

// sameAnswer checks that AnswerHere prints what the script prints.
func sameAnswer(t *testing.T, what string, s string) {
	t.Helper()
	req, ok := Decode(s)
	if !ok {
		t.Fatalf("%s: script does not decode", what)
	}
	got, ok := AnswerHere(req)
	if !ok {
		t.Fatalf("%s: not answered here", what)
	}
	if want := runScript(t, s); !bytes.Equal(got, want) {
		t.Errorf("%s: answered %q, the script prints %q", what, got, want)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// holder starts a process whose command line is the agent's, with arg, and
// which lives until the test ends.
func holder(t *testing.T, arg string) int {
	t.Helper()
	cmd := exec.Command("bash", "-c", "read -r x", arg)
	cmd.Args[0] = "sortie-agent"
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	// Start returns once the child has begun its exec, which may be before
	// the kernel has set its new command line: wait to see it.
	cmdline := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline"
	for deadline := time.Now().Add(10 * time.Second); ; {
		if b, _ := os.ReadFile(cmdline); strings.HasPrefix(string(b), "sortie-agent\x00") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("holder %d: command line not the agent's within 10s", cmd.Process.Pid)
		}
		time.Sleep(time.Millisecond)
	}
	return cmd.Process.Pid
}

// linkAgent links the agent program into d, as Start does.
func linkAgent(t *testing.T, d string) {
	t.Helper()
	prog, err := AgentProgram()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(prog, filepath.Join(d, "agent")); err != nil {
		t.Fatal(err)
	}
}

// The poll script asks the node's agent program; AnswerHere asks the same
// code in this process: the answers are the same bytes.
func TestAnswerHereMatchesPollScript(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(base, "node-0")
	poll := func(dir string) string { return script(pollBody, "D", dir) }

	sameAnswer(t, "no directory", poll(d))
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	sameAnswer(t, "empty directory", poll(d))
	write(t, filepath.Join(base, "file"), "")
	sameAnswer(t, "a file, not a directory", poll(filepath.Join(base, "file")))
	if err := os.Mkdir(filepath.Join(d, "started"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "begun"), "")
	sameAnswer(t, "claimed, no agent linked", poll(d))
	if out, _ := AnswerHere(Request{Op: OpPoll, Dir: d}); len(out) != 0 {
		t.Errorf("a node without its agent link answered %q, want nothing: its start did not finish", out)
	}

	linkAgent(t, d)
	write(t, filepath.Join(d, "phase"), "run\n\n")
	write(t, filepath.Join(d, "exit_code"), "run 143 stop\n")
	write(t, filepath.Join(d, "stop"), "")
	write(t, filepath.Join(d, "notice"), `{"kind":"preempted","source":"local","at":"2026-11-30T10:00:00Z","deadline":"2026-11-30T10:00:30Z"}`+"\n")
	sameAnswer(t, "done, stopped, noticed", poll(d))
	os.Remove(filepath.Join(d, "exit_code"))
	live := holder(t, d)
	write(t, filepath.Join(d, "pid"), strconv.Itoa(live)+"\n")
	sameAnswer(t, "a live agent", poll(d))

	// Through a symlink the agent's command line holds the real path.
	link := filepath.Join(base, "link")
	if err := os.Symlink(d, link); err != nil {
		t.Fatal(err)
	}
	sameAnswer(t, "through a symlink", poll(link))
	if out, _ := AnswerHere(Request{Op: OpPoll, Dir: link}); !bytes.Contains(out, []byte("alive=1\n")) {
		t.Errorf("through a symlink: %q, want the agent alive", out)
	}
	st, err := parseStatus(runScript(t, poll(link)))
	if err != nil {
		t.Fatal(err)
	}
	if !st.AgentAlive || st.Done || st.Notice == nil || st.Notice.Kind != "preempted" || !st.StopAsked {
		t.Errorf("parsed %+v, want a live agent, no code, the notice and the stop", st)
	}
}

func TestAnswerHereMatchesReadLogScript(t *testing.T) {
	d := t.TempDir()
	readLog := func(from, max int) string {
		return script(readLogBody, "D", d, "FROM", strconv.Itoa(from), "MAX", strconv.Itoa(max))
	}
	sameAnswer(t, "no log", readLog(1, 10))
	write(t, filepath.Join(d, "log"), "hello\nworld\n")
	for _, c := range [][2]int{{1, 100}, {1, 3}, {4, 5}, {12, 10}, {13, 10}, {14, 10}, {100, 10}, {1, 0}} {
		sameAnswer(t, "log from "+strconv.Itoa(c[0])+" max "+strconv.Itoa(c[1]), readLog(c[0], c[1]))
	}
}

func TestAnswerHereLeavesOddRequestsToTheScript(t *testing.T) {
	for _, req := range []Request{
		{Op: OpPoll, Dir: "relative/node"},
		{Op: OpInstall, Dir: "/tmp"},
		{Op: OpPoll, Dir: "/a/../b"},
		{Op: OpPoll, Dir: "/a\nb"},
		{Op: OpReadLog, Dir: "/tmp", Vars: map[string]string{"FROM": "0", "MAX": "1"}},
		{Op: OpReadLog, Dir: "/tmp", Vars: map[string]string{"FROM": "1"}},
		{Op: OpStop, Dir: "/tmp", Vars: map[string]string{"TICKS": "1"}},
		{Op: OpStart, Dir: "/tmp"},
	} {
		if out, ok := AnswerHere(req); ok {
			t.Errorf("AnswerHere(%+v) = %q, true; want it left to the script", req, out)
		}
	}
}

// startBothCtx starts spec in two fresh node directories: by the scripts (the
// agent copied to the node, then started), run as a local runner would, and
// by StartHere given ctx. It returns both directories.
func startBothCtx(t *testing.T, ctx context.Context, spec StartSpec, env []string) (byScript, here string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	byScript, here = filepath.Join(base, "a", "node-0"), filepath.Join(base, "b", "node-0")
	envs, err := EnvExports(spec.Env)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := tarFiles([]tarFile{{"env", envs, 0o600}, {"run.sh", []byte(spec.Run), 0o644}})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := findProgram()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.Open(prog.path)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	vars := []string{"W", spec.Workdir, "SUM", prog.sum, "NOTICE", "", "ENDPOINT", "", "GRACE", "30s"}
	for _, step := range []struct {
		s  string
		in io.Reader
	}{
		{script(installAgentBody, "D", byScript, "SUM", prog.sum, "NAME", agent.Program), bin},
		{script(startBody, append([]string{"D", byScript}, vars...)...), bytes.NewReader(payload)},
	} {
		cmd := exec.Command("bash", "-c", step.s)
		cmd.Dir, cmd.Env, cmd.Stdin = base, env, step.in
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("script: %v: %s", err, out)
		}
	}
	req, _ := Decode(script(startBody, append([]string{"D", here}, vars...)...))
	if ok, err := StartHere(ctx, req, payload, env); !ok || err != nil {
		t.Fatalf("StartHere = %v, %v", ok, err)
	}
	return byScript, here
}

func TestStartHereMatchesStartScript(t *testing.T) {
	startHereMatchesStartScript(t, context.Background())
}

// A node run by an agent server sees what one run by an agent of its own
// sees: the same environment, signals, directory and files.
func TestServedStartMatchesStartScript(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "agent.sock")
	startHereMatchesStartScript(t, WithAgentServer(context.Background(), sock))
}

// With a socket path longer than a unix socket's, the node gets an agent
// of its own.
func TestServedStartFallsBackToAnAgentOfItsOwn(t *testing.T) {
	sock := filepath.Join(t.TempDir(), strings.Repeat("s", 120))
	_, here := startBothCtx(t, WithAgentServer(context.Background(), sock), StartSpec{Run: "true"}, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()})
	if _, err := os.Stat(filepath.Join(here, agent.FileServed)); err == nil {
		t.Fatal("a node was served over a socket path too long to listen on")
	}
	if !exists(filepath.Join(here, "pid")) && !exists(filepath.Join(here, "begun")) {
		t.Fatal("no agent began on the node")
	}
	waitReaped(t, here)
}

// waitReaped waits for the agent's last word on the node in d (reaped,
// after the exit code): a test's directory is removed only after it.
func waitReaped(t *testing.T, d string) {
	t.Helper()
	for range 2000 {
		if agent.Reaped(d) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the agent did not finish with %s", d)
}

func startHereMatchesStartScript(t *testing.T, ctx context.Context) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	spec := StartSpec{Run: "env | LC_ALL=C sort; grep -E '^Sig(Ign|Blk)' /proc/self/status; pwd; ls -l --time-style=+%s ..", Env: map[string]string{"K": "v"}}
	a, b := startBothCtx(t, ctx, spec, env)
	_, served := ctx.Value(agentServerKey{}).(string)
	if served {
		pid, id := AgentPID(b), ""
		if v, err := os.ReadFile(filepath.Join(b, agent.FileServed)); err == nil {
			id = strings.TrimSpace(string(v))
		}
		if id == "" || pid <= 1 {
			t.Fatalf("the node was not served (pid %d, id %q)", pid, id)
		}
		if exists(filepath.Join(b, agent.FileBegun)) {
			t.Error("a served node has a begun file: the server claims it by served alone")
		}
		if _, err := os.Lstat(filepath.Join(b, agent.FileAgent)); err == nil {
			t.Error("a served node has an agent link")
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
	if left, _ := filepath.Glob(filepath.Join(b, ".start*")); len(left) != 0 {
		t.Errorf("StartHere left beside the node's files: %v", left)
	}
	again, _ := Decode(script(startBody, "D", b, "W", "", "SUM", "x", "NOTICE", "", "ENDPOINT", "", "GRACE", "30s"))
	if ok, err := StartHere(ctx, again, mustTar(t), env); !ok || err != nil {
		t.Fatalf("second StartHere = %v, %v; want nothing done", ok, err)
	}
	logs := map[string]string{}
	for _, d := range []string{a, b} {
		for range 1000 {
			if _, err := os.Stat(d + "/exit_code"); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		ec, _ := os.ReadFile(d + "/exit_code")
		if string(ec) != "run 0 -\n" {
			t.Fatalf("%s: exit_code %q", d, ec)
		}
		waitReaped(t, d)
		log, _ := os.ReadFile(d + "/log")
		s := strings.ReplaceAll(string(log), d, "$D")
		// Of the listing, only what Start made: the agent's own files
		// may or may not be there yet. The agent link points at the
		// program where each start found it.
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) == 9 && f[6] == "agent" && f[7] == "->" {
				if served {
					// A node an agent server runs has no agent link.
					continue
				}
				l = f[0] + " " + f[6]
			} else if len(f) == 7 {
				switch f[6] {
				case "env", "run.sh":
					l = f[0] + " " + f[4] + " " + f[5] + " " + f[6]
				case "cwd":
					// The script writes it always; StartHere only for a
					// working directory other than the default.
					continue
				case "started", "workdir":
					l = f[0] + " " + f[6]
				default:
					continue
				}
			} else if strings.HasPrefix(l, "total ") {
				continue
			}
			keep = append(keep, l)
		}
		logs[d] = strings.Join(keep, "\n")
	}
	if logs[a] != logs[b] {
		t.Errorf("the task saw, started by the script:\n%s\nand by StartHere:\n%s", logs[a], logs[b])
	}
}

func mustTar(t *testing.T) []byte {
	t.Helper()
	b, err := tarFiles([]tarFile{{"run.sh", []byte("exit 9\n"), 0o644}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The files a task can fill are read only up to a bound, the same here as
// by the script.
func TestAnswerHereBoundsWhatTheTaskCanWrite(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(base, "node-0")
	if err := os.MkdirAll(filepath.Join(d, "begun"), 0o755); err != nil {
		t.Fatal(err)
	}
	linkAgent(t, d)
	poll := script(pollBody, "D", d)
	for _, content := range []string{
		strings.Repeat("7", 70<<10),
		"run 3" + strings.Repeat(" ", 100),
		"run 3" + strings.Repeat("\n", 100),
		strings.Repeat("r", MaxStateValue) + "\n",
		strings.Repeat("r", MaxStateValue+1),
	} {
		write(t, filepath.Join(d, "phase"), content)
		write(t, filepath.Join(d, "exit_code"), content)
		sameAnswer(t, "files of "+strconv.Itoa(len(content))+" bytes", poll)
		out, _ := AnswerHere(Request{Op: OpPoll, Dir: d})
		if len(out) > 4*MaxStateValue {
			t.Errorf("poll answered %d bytes for %d-byte files", len(out), len(content))
		}
	}
}

func TestParseStatusNeverFailsOnWhatTheTaskWrote(t *testing.T) {
	for _, tc := range []struct {
		out         string
		wantCode    int
		wantPhase   string
		wantInvalid bool
	}{
		{"started=1\nphase=run\nexit=run 0\n", 0, PhaseRun, false},
		{"exit=setup 255\n", 255, PhaseSetup, false},
		{"exit=run 256\n", 0, "", true},
		{"exit=run 99999999999\n", 0, "", true},
		{"exit=run 99999999999999999999999\n", 0, "", true},
		{"exit=run 007\n", 0, "", true},
		{"exit=run \n", 0, "", true},
		{"exit=walk 1\n", 0, "", true},
		{"exit=\n", 0, "", true},
		{"phase=" + strings.Repeat("x", 1<<20) + "\n", 0, "", false},
	} {
		st, err := parseStatus([]byte(tc.out))
		if err != nil {
			t.Errorf("parseStatus(%.40q): %v", tc.out, err)
			continue
		}
		if (st.Invalid != "") != tc.wantInvalid || st.ExitCode != tc.wantCode || st.Phase != tc.wantPhase {
			t.Errorf("parseStatus(%.40q) = %+v, want code %d phase %q invalid %v", tc.out, st, tc.wantCode, tc.wantPhase, tc.wantInvalid)
		}
	}
}

// FuzzParseStatus checks, for any answer of a node: parsing never fails or
// panics; a Done status has either a code from 0 to 255 and a phase, or a
// short reason and no code; a status sortie formats parses back to itself.
func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{"", "started=1\nphase=run\nexit=run 3\nalive=1\n", "exit=run 99999999999\n", "exit=setup -1\nstopped=1\n", "phase=\x00\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		st, err := parseStatus(out)
		if err != nil {
			t.Fatalf("parseStatus: %v", err)
		}
		if st.Phase != "" && st.Phase != PhaseSetup && st.Phase != PhaseRun {
			t.Errorf("phase %q", st.Phase)
		}
		if st.Invalid != "" {
			if !st.Done || st.ExitCode != 0 {
				t.Errorf("invalid status %+v", st)
			}
			if len(st.Invalid) > 4*MaxStateValue+80 {
				t.Errorf("reason of %d bytes", len(st.Invalid))
			}
		} else if st.Done && (st.ExitCode < 0 || st.ExitCode > 255 || st.Phase == "") {
			t.Errorf("done with %+v", st)
		}
		if st.Invalid == "" {
			back, err := parseStatus(FormatStatus(st))
			if err != nil || !sameStatus(back, st) {
				t.Errorf("%+v formats and parses back to %+v, %v", st, back, err)
			}
		}
	})
}

// sameStatus compares two statuses, their notices by value.
func sameStatus(a, b Status) bool {
	an, bn := a.Notice, b.Notice
	a.Notice, b.Notice = nil, nil
	if len(a.Storage) != len(b.Storage) {
		return false
	}
	a.Storage, b.Storage = nil, nil
	if !reflect.DeepEqual(a, b) || (an == nil) != (bn == nil) {
		return false
	}
	return an == nil || (an.Kind == bn.Kind && an.Source == bn.Source && an.At.Equal(bn.At) && an.Deadline.Equal(bn.Deadline))
}

// fakeAgent starts a process whose command line is the agent's for d,
// running body in d, and records its pid there.
func fakeAgent(t *testing.T, d, body string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", body, d)
	cmd.Args[0] = "sortie-agent"
	cmd.Dir = d
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	write(t, d+"/pid", strconv.Itoa(cmd.Process.Pid)+"\n")
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); in.Close(); <-done })
}

// The agent's answer looks at the agent before it reads the exit code;
// under load the window between the two looks widens, and a conformance
// test once saw a node "dead without an exit code" there. Agents that
// always write their code end while a poll loop watches each: none may be
// seen dead without it.
func TestPollScriptNeverSeesAnAgentDeadWithoutItsCode(t *testing.T) {
	n := 30
	if testing.Short() {
		n = 10
	}
	for i := 0; i < n; i++ {
		d, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		write(t, d+"/begun", "")
		linkAgent(t, d)
		fakeAgent(t, d, `sleep 0.0$((RANDOM % 4)); echo "run 7 -" >exit_code.tmp; mv exit_code.tmp exit_code; exit 0`)
		s := script(pollBody, "D", d)
		for {
			st, err := parseStatus(runScript(t, s))
			if err != nil {
				t.Fatal(err)
			}
			if st.Done {
				if st.ExitCode != 7 {
					t.Fatalf("agent %d: %+v, want exit code 7", i, st)
				}
				break
			}
			if !st.AgentAlive || st.AgentLost {
				t.Fatalf("agent %d: seen dead without an exit code, yet it wrote 7 before exiting: %+v", i, st)
			}
		}
	}
}

// A Start on this machine with WithAgentExit tells of the agent's exit,
// once, after the exit code is written; one without it tells nobody.
func TestStartHereTellsOfTheAgentsExit(t *testing.T) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	envs, err := EnvExports(nil)
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(base, "gate")
	payload, err := tarFiles([]tarFile{{"env", envs, 0o600}, {"run.sh", []byte("while [ ! -e " + gate + " ]; do sleep 0.01; done; exit 3"), 0o644}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "node-0")
	req, _ := Decode(script(startBody, "D", dir, "W", "", "SUM", "x", "NOTICE", "", "ENDPOINT", "", "GRACE", "30s"))
	exited := make(chan string, 2)
	ctx := WithAgentExit(context.Background(), func() {
		ec, _ := os.ReadFile(filepath.Join(dir, "exit_code"))
		exited <- string(ec)
	})
	if ok, err := StartHere(ctx, req, payload, env); !ok || err != nil {
		t.Fatalf("StartHere = %v, %v", ok, err)
	}
	select {
	case ec := <-exited:
		t.Fatalf("told of the exit (exit_code %q) while the task runs", ec)
	default:
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case ec := <-exited:
		if ec != "run 3 -\n" {
			t.Errorf("exit_code %q when told of the exit, want %q", ec, "run 3 -\n")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("not told of the agent's exit within 30s")
	}
	select {
	case <-exited:
		t.Error("told of the exit twice")
	case <-time.After(100 * time.Millisecond):
	}
}

// A start cut short after the claim (started made, a file half written,
// no agent begun) is finished by the next StartHere: every file is put in
// whole, the task runs once, and nothing is left beside the files.
func TestStartHereFinishesAHalfStart(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(base, "node-0")
	if err := os.MkdirAll(filepath.Join(d, "started"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "run.sh"), "exi") // cut short
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	payload, err := tarFiles([]tarFile{{"env", []byte("export K=v\n"), 0o600}, {"run.sh", []byte("echo \"$K\"; exit 7\n"), 0o644}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := Decode(script(startBody, "D", d, "W", "", "SUM", "x", "NOTICE", "", "ENDPOINT", "", "GRACE", "30s"))
	for range 2 { // the second finds the agent begun and does nothing
		if ok, err := StartHere(context.Background(), req, payload, env); !ok || err != nil {
			t.Fatalf("StartHere = %v, %v", ok, err)
		}
	}
	waitReaped(t, d)
	if ec, _ := os.ReadFile(filepath.Join(d, "exit_code")); string(ec) != "run 7 -\n" {
		t.Errorf("exit_code %q, want run 7", ec)
	}
	if log, _ := os.ReadFile(filepath.Join(d, "log")); string(log) != "v\n" {
		t.Errorf("log %q, want the task to have run once with its env", log)
	}
	if exists(filepath.Join(d, "cwd")) {
		t.Error("a cwd file for the default working directory")
	}
	for _, name := range []string{"run.sh", "env"} {
		fi, err := os.Stat(filepath.Join(d, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "run.sh" && fi.Mode().Perm() != 0o644 {
			t.Errorf("run.sh mode %v, want 0644 as the payload says", fi.Mode().Perm())
		}
	}
	left, _ := filepath.Glob(filepath.Join(d, ".start*"))
	if len(left) != 0 {
		t.Errorf("left beside the node's files: %v", left)
	}
}

// While an agent server runs a node this process asked for, ServedHere
// hands out a channel, closed once the server is done with the node: its
// exit code written and its lock on the node let go.
func TestServedHereUntilTheServerIsDone(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, gate := filepath.Join(base, "node-0"), filepath.Join(base, "gate")
	ctx := WithAgentServer(context.Background(), filepath.Join(base, "agent.sock"))
	payload, err := tarFiles([]tarFile{{"run.sh", []byte("while [ ! -e " + gate + " ]; do sleep 0.01; done\n"), 0o644}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := Decode(script(startBody, "D", d, "W", "", "SUM", "x", "NOTICE", "", "ENDPOINT", "", "GRACE", "30s"))
	if ok, err := StartHere(ctx, req, payload, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}); !ok || err != nil {
		t.Fatalf("StartHere = %v, %v", ok, err)
	}
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644); waitReaped(t, d) })
	done, ok := ServedHere(d)
	if !ok {
		t.Fatal("ServedHere: no channel for a node the server runs")
	}
	select {
	case <-done:
		t.Fatal("the channel closed while the task still runs")
	default:
	}
	write(t, gate, "")
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the channel did not close after the task ended")
	}
	if !exists(filepath.Join(d, "exit_code")) {
		t.Error("done before the exit code was written")
	}
	f, err := os.Open(filepath.Join(d, agent.FileServed))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Errorf("the server still holds the node's lock once done: %v", err)
	}
	if _, ok := ServedHere(d); ok {
		t.Error("ServedHere still answers for a node the server is done with")
	}
}

// A working directory other than the default is written down in cwd, and
// the task runs there; `jobs ssh` finds it the same way (shellBody).
func TestStartHereWritesCwdForAnotherWorkdir(t *testing.T) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	a, b := startBothCtx(t, context.Background(), StartSpec{Run: "pwd", Workdir: "w d"}, env)
	for _, d := range []string{a, b} {
		waitReaped(t, d)
		if cwd, err := os.ReadFile(filepath.Join(d, "cwd")); err != nil || string(cwd) != d+"/w d" {
			t.Errorf("%s: cwd %q, %v; want %q", d, cwd, err, d+"/w d")
		}
		if log, _ := os.ReadFile(filepath.Join(d, "log")); string(log) != d+"/w d\n" {
			t.Errorf("%s: the task ran in %q", d, log)
		}
	}
}

// A server that takes the request and never answers may yet run the node:
// the start fails, and no agent of the node's own is started beside it.
func TestUnansweredServerGetsNoAgentBesideIt(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(base, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // read nothing, answer nothing
		}
	}()
	d := filepath.Join(base, "node-0")
	ctx, cancel := context.WithTimeout(WithAgentServer(context.Background(), sock), 300*time.Millisecond)
	defer cancel()
	req, _ := Decode(script(startBody, "D", d, "W", "", "SUM", "x", "NOTICE", "", "ENDPOINT", "", "GRACE", "30s"))
	ok, err := StartHere(ctx, req, mustTar(t), []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()})
	if !ok || err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("StartHere = %v, %v; want the start failed for want of an answer", ok, err)
	}
	if claimed(d) {
		t.Error("an agent claimed the node beside the server that was asked")
	}
}
