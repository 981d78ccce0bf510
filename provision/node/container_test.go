package node_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision/node"
)

// fakeDocker puts on PATH a docker that answers info, records every call
// in the returned file, and runs `run`'s command itself, in its -w
// directory with its -e variables, as the container would.
func fakeDocker(t *testing.T) (calls string) {
	t.Helper()
	bin := t.TempDir()
	calls = filepath.Join(bin, "calls")
	script := `#!/bin/bash
printf '%s\n' "$*" >>` + calls + `
case $1 in
info) exit 0 ;;
--version) echo "Docker version 0.0.0-fake"; exit 0 ;;
rm) exit 0 ;;
run) shift ;;
*) exit 1 ;;
esac
while [ $# -gt 0 ]; do
	case $1 in
	--rm | --init) shift ;;
	--name | --network | -v | --gpus | --device) shift 2 ;;
	-w) cd "$2" || exit 125; shift 2 ;;
	-e) export "$2"; shift 2 ;;
	-*) echo "fake docker: unknown option $1" >&2; exit 125 ;;
	*) break ;;
	esac
done
shift # the image
exec "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return calls
}

func TestTaskRunsInTheContainerImage(t *testing.T) {
	calls := fakeDocker(t)
	r := newNode(t)
	ctx := context.Background()
	engine, err := node.ContainerEngine(ctx, r, false)
	if err != nil || engine != "docker" {
		t.Fatalf("ContainerEngine = %q, %v; want docker", engine, err)
	}
	spec := node.StartSpec{
		Setup:     `echo "setup in $(pwd) as $GREETING"`,
		Run:       `echo "run sees $GREETING"; exit 7`,
		Env:       map[string]string{"GREETING": "hello there"},
		Container: &node.Container{Engine: engine, Image: "python:3.12-slim", Mounts: []string{"/data/models", "relative/ignored"}},
	}
	if err := node.Start(ctx, r, spec); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, r)
	if st.Phase != node.PhaseRun || st.ExitCode != 7 {
		t.Fatalf("status %+v, want run exited 7 (the container's code)", st)
	}
	dir, _ := filepath.EvalSymlinks(r.Dir())
	if got, want := readLog(t, r), "setup in "+dir+"/workdir as hello there\nrun sees hello there\n"; got != want {
		t.Errorf("log %q, want %q", got, want)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var runs, rms []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "run "):
			runs = append(runs, l)
		case strings.HasPrefix(l, "rm "):
			rms = append(rms, l)
		}
	}
	if len(runs) != 2 || len(rms) != 2 {
		t.Fatalf("docker calls:\n%s\nwant a run and an rm per phase", b)
	}
	for i, phase := range []string{"setup", "run"} {
		for _, want := range []string{"run --rm --init --name sortie-", "-" + phase + " --network host",
			"-v " + dir + ":" + dir, "-w " + dir + "/workdir", "-e SORTIE_NODE_DIR=" + dir, "-v /data/models:/data/models",
			" python:3.12-slim /bin/sh -c ", " " + dir + " " + phase} {
			if !strings.Contains(runs[i], want) {
				t.Errorf("%s's docker run %q lacks %q", phase, runs[i], want)
			}
		}
		if strings.Contains(runs[i], "relative/ignored") {
			t.Errorf("a relative mount reached docker run: %q", runs[i])
		}
		if !strings.HasPrefix(rms[i], "rm -f sortie-") || !strings.HasSuffix(rms[i], "-"+phase) {
			t.Errorf("rm after %s: %q", phase, rms[i])
		}
	}
}

func TestNoContainerEngineIsAPrecheck(t *testing.T) {
	ctx := context.Background()
	var pe *node.PrecheckError

	// This machine's own docker, if any, asked for real: a client without
	// its daemon is no engine.
	if _, err := exec.LookPath("docker"); err == nil {
		if exec.Command("docker", "info").Run() == nil {
			t.Log("this machine's docker engine answers; its no-engine case is not checked here")
		} else {
			_, err := node.ContainerEngine(ctx, newNode(t), false)
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "docker is installed but its engine does not answer") {
				t.Errorf("ContainerEngine with a docker client and no daemon = %v, want a PrecheckError saying so", err)
			}
		}
	}

	bin := t.TempDir()
	for _, tool := range []string{"bash", "tail", "tr"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	_, err := node.ContainerEngine(ctx, newNode(t), false)
	if !errors.As(err, &pe) || pe.Msg != "no container engine on the node; neither docker nor podman is installed" {
		t.Errorf("ContainerEngine without docker or podman = %v, want a PrecheckError saying so", err)
	}
	dead := "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(dead), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = node.ContainerEngine(ctx, newNode(t), false)
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "docker is installed but its engine does not answer (docker info: Cannot connect to the Docker daemon") {
		t.Errorf("ContainerEngine with a dead daemon = %v, want a PrecheckError quoting docker", err)
	}
}

// On a VM of sortie's own without docker, ContainerEngine installs it
// with the package manager (here a fake apt-get that makes a docker
// appear), through sudo when not root; asked not to, it only says so.
func TestContainerEngineInstallsDockerWhenAllowed(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "tail", "tr", "id", "env", "chmod"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(bin, "log")
	scripts := map[string]string{
		"sudo":      "#!/bin/bash\n[ \"$1\" = -n ] && shift\nexec \"$@\"\n",
		"systemctl": "#!/bin/bash\necho \"systemctl $*\" >>" + log + "\n",
		"apt-get": "#!/bin/bash\necho \"apt-get $*\" >>" + log + "\n" +
			"case \" $* \" in *' install '*) printf '#!/bin/sh\\nexit 0\\n' >" + filepath.Join(bin, "docker") + "; chmod +x " + filepath.Join(bin, "docker") + " ;; esac\n",
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	ctx := context.Background()
	var pe *node.PrecheckError
	if _, err := node.ContainerEngine(ctx, newNode(t), false); !errors.As(err, &pe) {
		t.Fatalf("without leave to install: %v, want a PrecheckError", err)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal("ContainerEngine ran the package manager without leave to install")
	}
	engine, err := node.ContainerEngine(ctx, newNode(t), true)
	if err != nil || engine != "docker" {
		t.Fatalf("ContainerEngine allowed to install = %q, %v; want docker", engine, err)
	}
	b, _ := os.ReadFile(log)
	for _, want := range []string{"apt-get -o DPkg::Lock::Timeout=120 update -qq", "install -y -qq docker.io", "systemctl start docker"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("install steps %q lack %q", b, want)
		}
	}
}
