package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// project lays out files under a new directory and returns it.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func problems(t *testing.T, err error) []string {
	t.Helper()
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T), want a *schema.ValidationError", err, err)
	}
	var out []string
	for _, p := range ve.Problems {
		out = append(out, p.Error())
	}
	return out
}

func TestRelativePathsAreTakenFromTheLaunchDirectory(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{
		"code/train.py":        "print(1)\n",
		"data/shard.csv":       "a\n",
		"examples/train.yaml":  "workdir: code\nfile_mounts: {/data/shard.csv: data/shard.csv}\nrun: python train.py\n",
		"examples/here.yaml":   "workdir: .\nrun: ls\n",
		"examples/code/old.py": "print('the file directory, not the launch directory')\n",
	})
	file := filepath.Join(root, "examples", "train.yaml")

	// Launched from the project root, as a SkyPilot user would.
	j, err := s.Launch(ctx, contract.LaunchRequest{File: file, Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.Store.Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.BaseDir != root {
		t.Errorf("base dir %q, want the launch directory %q", stored.BaseDir, root)
	}
	want, err := schema.PipelineKey(mustParse(t, file), root)
	if err != nil {
		t.Fatal(err)
	}
	if *j.InputKey != want {
		t.Errorf("input key hashed another workdir than %s/code", root)
	}

	// workdir: . is the launch directory, wherever the file is.
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "examples", "here.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	if w := plan.Tasks[0].Workdir; w == nil || *w != root {
		t.Errorf("workdir . resolved to %v, want %s", w, root)
	}

	// From the file's directory, the same file names other paths.
	_, err = s.Launch(ctx, contract.LaunchRequest{File: file, Dir: filepath.Join(root, "examples")})
	got := problems(t, err)
	if len(got) != 1 || !strings.Contains(got[0], `file_mounts./data/shard.csv: "data/shard.csv" source cannot be read: `+root+`/examples/data/shard.csv does not exist`) ||
		!strings.Contains(got[0], "relative paths are taken from the directory sortie runs in") {
		t.Errorf("problems %q", got)
	}

	// A retry keeps the launch's directory, whatever the caller's is.
	endJob(t, s, j.ID)
	t.Chdir(t.TempDir())
	res, err := s.Retry(ctx, contract.RetryRequest{IDs: []int64{j.ID}, Reason: "again"})
	if err != nil {
		t.Fatal(err)
	}
	retried, _ := s.Store.Job(ctx, res[0].Retry.ID)
	if retried.BaseDir != root || *res[0].Retry.InputKey != want {
		t.Errorf("retry base dir %q key %v, want %q and the launch's key", retried.BaseDir, *res[0].Retry.InputKey, root)
	}
}

func mustParse(t *testing.T, file string) *schema.Pipeline {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := schema.Parse(b, clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// endJob ends a job CANCELLED as the controller would, so it can be retried.
func endJob(t *testing.T, s *Service, id int64) {
	t.Helper()
	d := strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "cancelled by user"}
	if err := s.Store.FinishJob(context.Background(), id, d); err != nil {
		t.Fatal(err)
	}
}

func TestLaunchStageProblemsComeTogether(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{
		"one.yaml":  "workdir: code\nfile_mounts: {/a: missing.txt, /b: r2://bucket/x}\nenvs: {HF_TOKEN: }\nsecrets: {TOKEN: null}\nrun: 'true'\n",
		"two.yaml":  "name: p\n---\nrun: 'true'\n---\nworkdir: gone\nrun: 'true'\n",
		"file.yaml": "workdir: notadir\nrun: 'true'\n",
		"notadir":   "x",
	})
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"one.yaml", []string{
			"envs.HF_TOKEN: is required at launch; pass --env HF_TOKEN=VALUE or --env-file FILE",
			`file_mounts./b: "r2://bucket/x" is a URL of a store sortie does not sync (r2://)`,
			"secrets.TOKEN: has no value; set TOKEN in your environment or pass --secret TOKEN=VALUE",
			`workdir: "code" cannot be read: ` + root + "/code does not exist",
			`file_mounts./a: "missing.txt" source cannot be read: ` + root + "/missing.txt does not exist",
		}},
		{"two.yaml", []string{`tasks[1].workdir: "gone" cannot be read: ` + root + "/gone does not exist"}},
		{"file.yaml", []string{`workdir: "notadir" is not a directory (` + root + "/notadir); give the directory the task runs in"}},
	} {
		_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, tc.file), Dir: root})
		got := problems(t, err)
		if len(got) != len(tc.want) {
			t.Errorf("%s: problems %q, want %d", tc.file, got, len(tc.want))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tc.want[i]) {
				t.Errorf("%s: problem %d is\n%s\nwant it to start with\n%s", tc.file, i, got[i], tc.want[i])
			}
		}
	}
	// A dry run of the same valid file passes and lists what the launch
	// lacks, each as the launch says it.
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "two.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Missing) != 1 || !strings.HasPrefix(plan.Missing[0], `tasks[1].workdir: "gone" cannot be read`) || plan.InputKey != nil {
		t.Errorf("plan missing %q, input key %v", plan.Missing, plan.InputKey)
	}
	jobs, _ := s.Store.Jobs(ctx, store.JobFilter{})
	if len(jobs) != 0 {
		t.Errorf("%d jobs stored by refused launches", len(jobs))
	}
}

func TestSecretFlagFillsEveryTask(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"p.yaml": "run: 'true'\n---\nsecrets: {TOKEN: null}\nrun: 'true'\n"})
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root, Secrets: map[string]string{"TOKEN": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range plan.Tasks {
		if diff := cmp.Diff([]string{"TOKEN"}, tp.Secrets); diff != "" {
			t.Errorf("task %d secrets (-want +got):\n%s", tp.Task, diff)
		}
	}
	_, err = s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root, Secrets: map[string]string{"BAD-NAME": "v"}})
	if got := problems(t, err); len(got) != 1 || !strings.HasPrefix(got[0], "--secret BAD-NAME: is not a valid variable name") {
		t.Errorf("problems %q", got)
	}
}

func TestOverridesReachEveryCandidateThatSetsTheField(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{
		"t.yaml": `
resources:
  cpus: 2
  ordered:
    - {region: local, zone: local-b, accelerators: A100:1}
    - {zone: local-a}
run: 'true'
`,
		"p.yaml": "name: p\n---\nrun: 'true'\n---\nrun: 'true'\n",
	})
	spot, nodes := true, 3
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root, CPUs: "8+", GPUs: "L4:2", Zone: "local-a",
		UseSpot: &spot, NumNodes: &nodes})
	if err != nil {
		t.Fatal(err)
	}
	tp := plan.Tasks[0]
	if tp.NumNodes != 3 {
		t.Errorf("num_nodes %d, want 3", tp.NumNodes)
	}
	// Both candidates name a place, so --zone moves both to local-a: one
	// placement is left. The first one's accelerators are replaced.
	if len(tp.Placements) != 1 {
		t.Fatalf("placements %+v, want the one both candidates became", tp.Placements)
	}
	pl := tp.Placements[0]
	if deref(pl.Zone) != "local-a" || deref(pl.CPUs) != "8+" || deref(pl.Accelerators) != "L4:2" || !pl.UseSpot || pl.ResolvedBy != "sortie" {
		t.Errorf("placement %+v", pl)
	}

	// "none" removes a field, as in SkyPilot.
	plan, err = s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root, CPUs: "none"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range plan.Tasks[0].Placements {
		if pl.CPUs != nil {
			t.Errorf("--cpus none left cpus %s", *pl.CPUs)
		}
	}

	// Every task of a pipeline takes the flags.
	plan, err = s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root, Memory: "16+"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range plan.Tasks {
		if deref(tp.Placements[0].Memory) != "16+" {
			t.Errorf("task %d memory %v", tp.Task, tp.Placements[0].Memory)
		}
	}

	// A bad value names the flag, once, however many tasks it set.
	_, err = s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root, CPUs: "many", Memory: "16+"})
	got := problems(t, err)
	if len(got) != 1 || !strings.HasPrefix(got[0], `--cpus: "many"`) {
		t.Errorf("problems %q, want one naming --cpus", got)
	}
	_, err = s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root, Infra: "local", Region: "local"})
	var ue *contract.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--infra") {
		t.Errorf("--infra with --region: %v", err)
	}
}

func TestPlanListsCloudsTheControllerResolves(t *testing.T) {
	ctx := context.Background()
	root := project(t, map[string]string{"t.yaml": `
resources:
  any_of:
    - {cloud: aws, region: us-east-1}
    - {cloud: gcp}
    - {cloud: aws, instance_type: m6i.large, region: us-west-2, zone: us-west-2b}
run: 'true'
`})
	home := filepath.Join(root, "home")
	s, err := OpenConfig(home, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	s.Getenv = credentialsEnv(t)
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pl := range plan.Tasks[0].Placements {
		got = append(got, strings.Join([]string{pl.Cloud, deref(pl.Region), deref(pl.Zone), pl.ResolvedBy,
			deref(pl.InstanceType), deref(pl.CPUs), deref(pl.Memory)}, "|"))
	}
	want := []string{
		"aws|us-east-1||controller||2+|8+",
		"gcp|||controller||2+|8+",
		"aws|us-west-2|us-west-2b|controller|m6i.large||",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run made the home: %v", err)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestRequiredEnvsAndWarnings(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": `
envs: {HF_TOKEN: , MODEL: small}
service: {readiness_probe: /}
run: echo $HF_TOKEN $MODEL
`})
	file := filepath.Join(root, "t.yaml")
	var warned []string
	warn := func(w string) { warned = append(warned, w) }

	_, err := s.Launch(ctx, contract.LaunchRequest{File: file, Dir: root, Warn: warn})
	if got := problems(t, err); len(got) != 1 || got[0] != "envs.HF_TOKEN: is required at launch; pass --env HF_TOKEN=VALUE or --env-file FILE" {
		t.Errorf("problems %q", got)
	}
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: file, Dir: root})
	if err != nil || len(plan.Missing) != 1 || !strings.HasPrefix(plan.Missing[0], "envs.HF_TOKEN: is required at launch") {
		t.Errorf("dry run without HF_TOKEN: %v, missing %q", err, plan.Missing)
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "service: ") {
		t.Errorf("warnings %q, want one about service", warned)
	}

	warned = nil
	plan, err = s.Plan(ctx, contract.LaunchRequest{File: file, Dir: root, Envs: map[string]string{"HF_TOKEN": "hf_x", "EXTRA": "1"}, Warn: warn})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"EXTRA", "HF_TOKEN", "MODEL"}, plan.Tasks[0].Envs); diff != "" {
		t.Errorf("env names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(warned, plan.Warnings); diff != "" || len(warned) != 1 {
		t.Errorf("plan warnings %q, told %q", plan.Warnings, warned)
	}
	b, _ := json.Marshal(plan)
	if strings.Contains(string(b), "hf_x") {
		t.Errorf("the plan shows an env value: %s", b)
	}

	j, err := s.Launch(ctx, contract.LaunchRequest{File: file, Dir: root, Envs: map[string]string{"HF_TOKEN": "hf_x"}})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := s.Store.Job(ctx, j.ID)
	p, err := schema.Unmarshal(stored.Spec, clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if p.Tasks[0].Envs["HF_TOKEN"] != "hf_x" {
		t.Errorf("stored envs %v", p.Tasks[0].Envs)
	}
}

func TestRetryWarnsOfIgnoredFieldsItSets(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": "run: 'true'\n"})
	j, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	endJob(t, s, j.ID)
	var warned []string
	_, err = s.Retry(ctx, contract.RetryRequest{IDs: []int64{j.ID}, Reason: "r", Sets: []string{"resources.autostop=10"},
		Warn: func(w string) { warned = append(warned, w) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], fmt.Sprintf("job %d: resources.autostop: ", j.ID)) {
		t.Errorf("warnings %q", warned)
	}
}

func TestShowListsTheTasksPorts(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{
		"one.yaml": "resources:\n  ports: [8080, \"10000-10010\"]\n  any_of: [{zone: local-a, ports: 9090}, {zone: local-b, ports: 8080}]\nrun: 'true'\n",
		"two.yaml": "name: p\n---\nrun: 'true'\n---\nresources: {ports: 22}\nrun: 'true'\n",
	})
	for file, want := range map[string][][]string{
		"one.yaml": {{"8080", "10000-10010", "9090"}},
		"two.yaml": {{}, {"22"}},
	} {
		j, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, file), Dir: root})
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Show(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for _, tv := range d.Tasks {
			got = append(got, tv.Ports)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s ports (-want +got):\n%s", file, diff)
		}
	}
}

func TestGPUsFlagReplacesAnAcceleratorSet(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": `
resources:
  accelerators: {A100: 1, H100: 1}
  ordered: [{zone: local-b}, {zone: local-a}]
run: 'true'
`})
	spot := true
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root, GPUs: "L4:1", UseSpot: &spot})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pl := range plan.Tasks[0].Placements {
		got = append(got, deref(pl.Zone)+" "+deref(pl.Accelerators)+" "+strconv.FormatBool(pl.UseSpot))
	}
	if diff := cmp.Diff([]string{"local-b L4:1 true", "local-a L4:1 true"}, got); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}
}

func TestHomeInPathsIsExpandedBeforeTheJobIsStored(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	home := project(t, map[string]string{"proj/run.sh": "echo hi\n", "data.csv": "a\n"})
	t.Setenv("HOME", home)
	root := project(t, map[string]string{"t.yaml": "workdir: ~/proj\nfile_mounts: {/data.csv: ~/data.csv}\nrun: bash run.sh\n"})
	j, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := s.Store.Job(ctx, j.ID)
	p, err := schema.Unmarshal(stored.Spec, clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	// The controller joins a relative path to the launch directory; it
	// must find these as they are.
	if got := p.Tasks[0].Workdir; got != filepath.Join(home, "proj") {
		t.Errorf("stored workdir %q", got)
	}
	if got := p.Tasks[0].FileMounts["/data.csv"]; got != filepath.Join(home, "data.csv") {
		t.Errorf("stored mount source %q", got)
	}
}

func TestMoreSkyPilotFlags(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{
		"src/main.sh": "echo\n",
		"t.yaml":      "resources:\n  ports: 22\n  ordered: [{zone: local-a, instance_type: big}, {zone: local-b}]\nrun: 'true'\n",
	})
	file := filepath.Join(root, "t.yaml")
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: file, Dir: root, InstanceType: "small", DiskSize: "1TB", DiskTier: "high",
		NetworkTier: "best", ImageID: "img-1", Ports: []string{"8080", "9000-9001"}, Workdir: "src"})
	if err != nil {
		t.Fatal(err)
	}
	tp := plan.Tasks[0]
	if diff := cmp.Diff([]string{"8080", "9000-9001"}, tp.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if tp.Workdir == nil || *tp.Workdir != filepath.Join(root, "src") {
		t.Errorf("workdir %v", tp.Workdir)
	}
	for _, pl := range tp.Placements {
		if deref(pl.InstanceType) != "small" || pl.DiskSize == nil || *pl.DiskSize != 1024 || deref(pl.DiskTier) != "high" ||
			deref(pl.NetworkTier) != "best" || deref(pl.ImageID) != "img-1" {
			t.Errorf("placement %s: %+v", deref(pl.Zone), pl)
		}
	}
	plan, err = s.Plan(ctx, contract.LaunchRequest{File: file, Dir: root, Ports: []string{"none"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Tasks[0].Ports) != 0 {
		t.Errorf("--ports none left %v", plan.Tasks[0].Ports)
	}
	_, err = s.Plan(ctx, contract.LaunchRequest{File: file, Dir: root, Ports: []string{"70000"}, DiskTier: "fastest"})
	got := problems(t, err)
	all := strings.Join(got, "\n")
	if len(got) != 2 || !strings.Contains(all, `--disk-tier: "fastest"`) || !strings.Contains(all, "--ports: 70000") {
		t.Errorf("problems %q, want --ports and --disk-tier named", got)
	}
}

func TestPlanShowsAGitWorkdir(t *testing.T) {
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": "workdir: {url: https://github.com/org/repo.git, ref: v1.2}\nrun: 'true'\n"})
	plan, err := s.Plan(context.Background(), contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	r := plan.Tasks[0].WorkdirRepo
	if r == nil || r.URL != "https://github.com/org/repo.git" || deref(r.Ref) != "v1.2" || plan.Tasks[0].Workdir != nil {
		t.Errorf("workdir %v, repo %+v", plan.Tasks[0].Workdir, r)
	}
}

func TestLaunchRefusesPlacementsTheConfigDoesNotOffer(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": "resources: {zone: nowhere}\nrun: 'true'\n", "aws.yaml": "resources: {cloud: aws, zone: nowhere}\nrun: 'true'\n"})
	_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if got := problems(t, err); len(got) != 1 || !strings.HasPrefix(got[0], "resources: ") || !strings.Contains(got[0], "nowhere") {
		t.Errorf("problems %q", got)
	}
	if _, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root}); err == nil {
		t.Error("the dry run passed a zone the local cloud does not have")
	}
	// A cloud only the controller can ask is left to it.
	s.Getenv = credentialsEnv(t)
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "aws.yaml"), Dir: root}); err != nil {
		t.Errorf("launch on aws: %v", err)
	}
}

func TestUnreadableInputsAreNamedWithAFix(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a file of mode 000; this needs an ordinary user")
	}
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"code/ok.py": "x\n", "code/private.key": "k\n", "data/a.csv": "a\n", "data/b.csv": "b\n",
		"t.yaml": "workdir: code\nfile_mounts: {/data: data}\nrun: 'true'\n"})
	for _, f := range []string{"code/private.key", "data/b.csv"} {
		if err := os.Chmod(filepath.Join(root, f), 0); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	got := problems(t, err)
	want := []string{
		`workdir: "code" cannot be read whole: ` + filepath.Join(root, "code/private.key") + ": permission denied; fix its permissions, or list it in .sortieignore",
		`file_mounts./data: "data" source cannot be read whole: ` + filepath.Join(root, "data/b.csv") + ": permission denied",
	}
	if len(got) != len(want) {
		t.Fatalf("problems %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d is\n%s\nwant it to start with\n%s", i, got[i], want[i])
		}
	}
}

// A webhook's secret must name a signing key of config.yaml; the launch
// says which and where, and stores nothing. A key that is there passes.
func TestLaunchRefusesAWebhookWithoutItsSigningKey(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	s.Config.Notify.Secrets = map[string]string{"ops": "0123456789abcdef0123"}
	root := project(t, map[string]string{
		"hook.yaml": "name: p\n---\nrun: 'true'\n---\nnotify:\n  webhooks:\n  - {url: https://h.example.com/a, secret: ops}\n  - {url: https://h.example.com/b, secret: nokey}\nrun: 'true'\n",
	})
	_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "hook.yaml"), Dir: root})
	got := problems(t, err)
	want := `tasks[1].notify.webhooks[1].secret: "nokey" names no signing key; add notify.secrets.nokey to ` + filepath.Join(s.Home, "config.yaml")
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("problems %q, want one starting %q", got, want)
	}
	if jobs, _ := s.Store.Jobs(ctx, store.JobFilter{}); len(jobs) != 0 {
		t.Errorf("%d jobs stored by a refused launch", len(jobs))
	}
	s.Config.Notify.Secrets["nokey"] = "fedcba9876543210fedcba"
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "hook.yaml"), Dir: root}); err != nil {
		t.Fatalf("with both keys: %v", err)
	}
}
