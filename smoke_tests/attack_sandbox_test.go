package smoke_tests

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sortie/controller/daemon"

	_ "github.com/mattn/go-sqlite3"
)

// sandboxEnv is a home whose local tasks run in the sandbox, on a machine
// that has bubblewrap (make deps installs it).
func sandboxEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("runs tasks in bubblewrap")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bubblewrap (bwrap) is missing: make deps installs it: %v", err)
	}
	return newEnv(t, append([]string{"SORTIE_LOCAL_SANDBOX=on"}, extra...)...)
}

// A task on local derives the sortie home from its node directory, as the
// attack on issue 30 did, and tries the secrets and the store.
func TestSandboxHidesTheSortieHome(t *testing.T) {
	e := sandboxEnv(t, "API_TOKEN=s3cr3t-value")
	f := e.write("task.yaml", `
secrets: {API_TOKEN: null}
run: |
  H=${SORTIE_NODE_DIR%%/local/*}
  echo "home $H"
  if cat "$H"/secrets/* 2>/dev/null; then echo LEAKED-SECRETS; fi
  if [ -e "$H/state.db" ]; then echo SEES-STORE; fi
  ls "$H" | sed 's/^/entry /'
  # What it writes there lands in an empty folder of the sandbox's own.
  python3 -c "import sqlite3,sys;c=sqlite3.connect(sys.argv[1]+'/state.db');c.execute('create table pwned(x)');c.commit()" "$H"
  touch "$H/planted" 2>/dev/null && echo PLANTED
  exit 0
`)
	id := e.launch(f)
	e.waitStatus(id, "SUCCEEDED")
	out := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout
	for _, bad := range []string{"LEAKED-SECRETS", "s3cr3t-value", "SEES-STORE", "entry state.db", "entry secrets"} {
		if strings.Contains(out, bad) {
			t.Errorf("the task reached the sortie home (%s):\n%s", bad, out)
		}
	}
	if _, err := os.Stat(filepath.Join(e.home, "planted")); err == nil {
		t.Errorf("the task wrote into the sortie home")
	}
	db, err := sql.Open("sqlite3", filepath.Join(e.home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`select count(*) from sqlite_master where name = 'pwned'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the task changed the store: table pwned made")
	}
}

// File mounts, absolute or ~/, are in the task's view only, and go with
// the node.
func TestSandboxFileMountsStayInTheNode(t *testing.T) {
	e := sandboxEnv(t)
	dst := fmt.Sprintf("/data/payload-%d.txt", os.Getpid())
	os.Remove(dst)
	e.write("payload.txt", "the payload\n")
	e.write("x.txt", "in home\n")
	f := e.write("task.yaml", fmt.Sprintf(`
file_mounts:
  %s: ./payload.txt
  ~/x.txt: ./x.txt
run: |
  echo "abs: $(cat %s)"
  echo "tilde: $(cat ~/x.txt)"
  N=${SORTIE_NODE_DIR%%/attempt-*}
  case $HOME in "$N"/*) echo "home is the node's" ;; esac
  [ -f "$HOME/x.txt" ] && echo "x in HOME"
  [ -e '~' ] && echo "LITERAL-TILDE"
  exit 0
`, dst, dst))
	id := e.launch(f)
	e.waitStatus(id, "SUCCEEDED")
	out := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout
	for _, want := range []string{"abs: the payload", "tilde: in home", "home is the node's", "x in HOME"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "LITERAL-TILDE") {
		t.Errorf("~/x.txt landed in a folder named ~:\n%s", out)
	}
	if _, err := os.Stat(dst); err == nil {
		os.Remove(dst)
		t.Errorf("%s was written on the host", dst)
	}
}

// A task cannot write the agent's records: its forged exit code is not the
// one the job ends with.
func TestSandboxExitCodeCannotBeForged(t *testing.T) {
	e := sandboxEnv(t)
	f := e.write("task.yaml", `
run: |
  printf "run 0 -\n" > ../exit_code
  printf "run 0 -\n" > "$SORTIE_NODE_DIR/exit_code"
  for f in "$SORTIE_NODE_DIR"/* "$SORTIE_NODE_DIR"/../* "$SORTIE_NODE_DIR"/../../*; do
    [ -f "$f" ] && printf "run 0 -\n" > "$f"
  done 2>/dev/null
  sleep 5
  exit 3
`)
	id := e.launch(f)
	d := e.waitStatus(id, "FAILED")
	if c := codes(d); len(c) == 0 || len(c[0]) == 0 || c[0][len(c[0])-1] != 3 {
		t.Errorf("exit codes %v, want the task's own 3", c)
	}
}

// A task sees and signals its own processes only: not the agent, not the
// controller.
func TestSandboxCannotSignalTheAgentOrController(t *testing.T) {
	e := sandboxEnv(t)
	e.waitStatus(e.launch(e.write("first.yaml", "run: exit 0\n")), "SUCCEEDED")
	ctl := daemon.Running(e.home)
	if ctl == 0 {
		t.Fatal("no controller running")
	}
	f := e.write("task.yaml", fmt.Sprintf(`
run: |
  A=$(cat "$SORTIE_NODE_DIR/pid")
  kill -9 "$A" && echo KILLED-AGENT
  kill -9 %d && echo KILLED-CONTROLLER
  sleep 1
  exit 0
`, ctl))
	id := e.launch(f)
	d := e.waitStatus(id, "SUCCEEDED")
	out := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout
	if strings.Contains(out, "KILLED-") {
		t.Errorf("the task signalled sortie's processes:\n%s", out)
	}
	if err := syscall.Kill(ctl, 0); err != nil {
		t.Errorf("controller %d: %v", ctl, err)
	}
	if c := codes(d); len(c) != 1 || len(c[0]) != 1 || c[0][0] != 0 {
		t.Errorf("exit codes %v, want one run ending 0", c)
	}
}
