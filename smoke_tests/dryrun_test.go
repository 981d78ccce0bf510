package smoke_tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// skypilotTask is a SkyPilot-style task file: a required env, a secret,
// ports, a SkyServe section, a relative workdir and mount that mean the
// directory the command runs in, and a SkyPilot image tag, which the plan
// says the cloud resolves at launch.
const skypilotTask = `
name: finetune
workdir: code
file_mounts:
  /data/shard.csv: data/shard.csv
envs:
  HF_TOKEN:
  MODEL: small
secrets:
  WANDB_KEY: null
resources:
  ports: [8080, "10000-10010"]
  any_of:
    - {zone: local-b}
    - {cloud: aws, region: us-east-1, instance_type: m6i.large, use_spot: true, image_id: "skypilot:gpu-ubuntu-2004"}
  job_recovery: {max_restarts_on_errors: 1, recover_on_exit_codes: [29]}
service:
  readiness_probe: /health
run: |
  echo "model $MODEL token $HF_TOKEN"
  cat train.txt
`

func TestDryRunPrintsThePlanAndStoresNothing(t *testing.T) {
	objs := loadOpenAPI(t)
	// AWS is enabled (keys in the environment), so its placement is
	// planned as the controller would resolve it.
	e := newEnv(t, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing")
	e.write("code/train.txt", "training code\n")
	e.write("data/shard.csv", "a,b\n")
	e.write("examples/finetune.yaml", skypilotTask)
	args := []string{"jobs", "launch", "--dry-run", "examples/finetune.yaml", "--env", "HF_TOKEN=hf-token-value", "--secret", "WANDB_KEY=wandb-key-value"}

	r := e.run(args...)
	if r.code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"Plan for job finetune", "local/local/local-b", "aws/us-east-1", "m6i.large",
		"8080, 10000-10010", filepath.Join(e.dir, "code"), "/data/shard.csv ← " + filepath.Join(e.dir, "data/shard.csv"),
		"HF_TOKEN, MODEL", "WANDB_KEY", "resolved by the controller",
		"image skypilot:gpu-ubuntu-2004 on aws: resolved at launch: the newest image of account 898082745236 named Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 20.04) *"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the plan lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "warning: service: ") {
		t.Errorf("no warning about service on stderr: %q", r.stderr)
	}

	j := e.run(append(args, "-o", "json")...)
	if j.code != 0 {
		t.Fatalf("dry run -o json: exit %d\n%s", j.code, j.stderr)
	}
	for _, out := range []string{r.stdout, r.stderr, j.stdout, j.stderr} {
		if strings.Contains(out, "hf-token-value") || strings.Contains(out, "wandb-key-value") {
			t.Errorf("a dry run printed an env or secret value:\n%s", out)
		}
	}
	c := newConformer(objs, map[string]string{"input_key": "<input-key>", "workdir": "<path>", "source": "<path>"})
	plan := c.conform("plan", "plan", decodeJSON(t, j.stdout), ref("plan"))
	c.report(t)
	for path, want := range map[string]any{
		"tasks.0.placements.0.zone":          "local-b",
		"tasks.0.placements.0.resolved_by":   "sortie",
		"tasks.0.placements.1.resolved_by":   "controller",
		"tasks.0.placements.1.instance_type": "m6i.large",
		"tasks.0.placements.0.image_lookup":  nil,
		"tasks.0.placements.1.image_lookup":  "resolved at launch: the newest image of account 898082745236 named Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 20.04) * (x86_64 only)",
		"tasks.0.workdir":                    filepath.Join(e.dir, "code"),
	} {
		if got := dig(decodeJSON(t, j.stdout), path); got != want {
			t.Errorf("plan %s is %v, want %v", path, got, want)
		}
	}
	compareGolden(t, filepath.Join("testdata", "contract", "plan.json"), plan)

	// Nothing was stored and nothing started: no home at all.
	if _, err := os.Stat(e.home); !os.IsNotExist(err) {
		t.Errorf("a dry run made %s: %v", e.home, err)
	}
	if q := e.queue("-a"); len(q) != 0 {
		t.Errorf("jobs stored: %+v", q)
	}
	if st := e.run("controller", "status"); !strings.HasPrefix(st.stdout, "not running") {
		t.Errorf("controller status after a dry run: %s", st.stdout)
	}
}

func TestEnvFlagWithoutAValuePassesTheCallersOn(t *testing.T) {
	e := newEnv(t, "HF_TOKEN=from-the-shell")
	f := e.write("t.yaml", "envs: {HF_TOKEN: }\nrun: 'true'\n")
	r := e.run("jobs", "launch", "--dry-run", f, "--env", "HF_TOKEN", "-o", "json")
	if r.code != 0 {
		t.Fatalf("--env HF_TOKEN with HF_TOKEN set: exit %d\n%s", r.code, r.stderr)
	}
	if got := dig(decodeJSON(t, r.stdout), "missing"); fmt.Sprint(got) != "[]" {
		t.Errorf("missing %v, want nothing: HF_TOKEN came from the shell", got)
	}
	r = e.run("jobs", "launch", "--dry-run", f, "--env", "NOT_IN_THE_SHELL")
	if r.code != 2 || !strings.Contains(r.stderr, "--env NOT_IN_THE_SHELL: NOT_IN_THE_SHELL is not set in your environment") {
		t.Errorf("--env of an unset variable: exit %d\n%s", r.code, r.stderr)
	}
}

func TestDryRunReportsEveryProblem(t *testing.T) {
	e := newEnv(t)
	f := e.write("bad.yaml", `
workdir: nowhere
envs: {HF_TOKEN: }
resources:
  job_recovery: {recover_on_exit_codes: [300]}
run: 'true'
`)
	r := e.run("jobs", "launch", "--dry-run", f)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "recover_on_exit_codes[0]: 300") {
		t.Errorf("no problem with the exit code:\n%s", r.stderr)
	}
	// The file's own problems come first; once it parses, every launch
	// problem comes at once.
	g := e.write("bad2.yaml", "workdir: nowhere\nfile_mounts: {/x: missing.txt}\nenvs: {HF_TOKEN: }\nrun: 'true'\n")
	r = e.run("jobs", "launch", "--dry-run", g, "--cpus", "lots")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `--cpus: "lots"`) {
		t.Errorf("the bad flag is not named:\n%s", r.stderr)
	}
	// A valid file passes a dry run, listing what the launch still lacks
	// here; the launch refuses it with every one of them.
	r = e.run("jobs", "launch", "--dry-run", g)
	if r.code != 0 {
		t.Fatalf("dry run of a valid file that lacks inputs here: exit %d, want 0\n%s", r.code, r.stderr)
	}
	missing := []string{"envs.HF_TOKEN: is required at launch; pass --env HF_TOKEN=VALUE or --env-file FILE",
		`workdir: "nowhere" cannot be read`, `file_mounts./x: "missing.txt" source cannot be read`}
	for _, want := range missing {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the plan lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "note: the file is valid; a launch from here would be refused until 3 missing input(s) are given") {
		t.Errorf("no note on stderr: %s", r.stderr)
	}
	if _, err := os.Stat(e.home); !os.IsNotExist(err) {
		t.Errorf("a dry run made %s", e.home)
	}
	r = e.run("jobs", "launch", "-d", g)
	if r.code != 2 || !strings.Contains(r.stderr, "3 problems in the task file") {
		t.Fatalf("launch: exit %d, want 2 with 3 problems\n%s", r.code, r.stderr)
	}
	for _, want := range missing {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the launch's refusal lacks %q:\n%s", want, r.stderr)
		}
	}
}

func TestEnvFileFillsRequiredEnvsAndRelativePathsAreFromTheWorkingDirectory(t *testing.T) {
	e := newEnv(t)
	e.write("code/train.txt", "training code from the project root\n")
	e.write("examples/code/train.txt", "the task file's directory: wrong\n")
	e.write("data/shard.csv", "a,b\n")
	e.write(".env", "# tokens\nexport HF_TOKEN='from-env-file'\nMODEL=\"large\" # wins over the file\n")
	local := strings.Replace(skypilotTask, "service:\n  readiness_probe: /health\n", "", 1)
	local = strings.Replace(local, "    - {cloud: aws, region: us-east-1, instance_type: m6i.large, use_spot: true, image_id: \"skypilot:gpu-ubuntu-2004\"}\n", "", 1)
	e.write("examples/finetune.yaml", local)

	// A required env still missing refuses the launch, naming the flag.
	r := e.run("jobs", "launch", "-d", "examples/finetune.yaml", "--secret", "WANDB_KEY=k")
	if r.code != 2 || !strings.Contains(r.stderr, "pass --env HF_TOKEN=VALUE or --env-file FILE") {
		t.Fatalf("launch without HF_TOKEN: exit %d\n%s", r.code, r.stderr)
	}
	if q := e.queue("-a"); len(q) != 0 {
		t.Fatalf("a refused launch stored %d jobs", len(q))
	}

	id := e.launch("examples/finetune.yaml", "--env-file", ".env", "--secret", "WANDB_KEY=k")
	e.waitStatus(id, "SUCCEEDED")
	out := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout
	for _, want := range []string{"model large token from-env-file", "training code from the project root"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	show := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(show, "Ports:         8080, 10000-10010") {
		t.Errorf("show lacks the ports:\n%s", show)
	}

	// workdir: . uploads the directory the command runs in.
	e.write("here.txt", "uploaded from the working directory\n")
	dot := e.write("examples/dot.yaml", "workdir: .\nrun: cat here.txt\n")
	id = e.launch(dot)
	e.waitStatus(id, "SUCCEEDED")
	if out := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout; !strings.Contains(out, "uploaded from the working directory") {
		t.Errorf("workdir . logs: %q", out)
	}
}
