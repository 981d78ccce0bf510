package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTree creates files (relative path -> content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const keyTask = `name: train
resources:
  cpus: 2+
  job_recovery: {max_restarts_on_errors: 1, recover_on_exit_codes: [29]}
workdir: ./src
file_mounts:
  /data: ./data
  /cfg.yaml: ./cfg.yaml
  /bucket: s3://bucket/x
envs: {A: "1"}
secrets: {TOKEN: hunter2}
run: python train.py
`

// keyFixture lays out a task's inputs in a temp dir and returns it.
func keyFixture(t testing.TB) string {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"src/train.py":    "print('hi')\n",
		"src/lib/util.py": "x = 1\n",
		"src/.gitignore":  "*.log\n/build/\n",
		"src/out.log":     "noise",
		"src/build/obj.o": "binary",
		"src/.git/HEAD":   "ref: refs/heads/main\n",
		"data/a.csv":      "1,2\n",
		"data/sub/b.csv":  "3,4\n",
		"cfg.yaml":        "lr: 0.1\n",
	})
	return dir
}

func key(t *testing.T, yaml, dir string) string {
	t.Helper()
	k, err := InputKey(mustParse(t, yaml).Tasks[0], dir)
	if err != nil {
		t.Fatalf("InputKey: %v", err)
	}
	return k
}

func TestInputKeySpec(t *testing.T) {
	dir := keyFixture(t)
	base := key(t, keyTask, dir)
	if len(base) != 64 {
		t.Fatalf("key %q is not a hex sha256", base)
	}
	same := map[string]string{
		"reordered keys, comments and flow style": `# the same task, written differently
run: python train.py
secrets: {TOKEN: hunter2}
envs:
  A: "1"            # same value
file_mounts: {/bucket: s3://bucket/x, /cfg.yaml: cfg.yaml, /data: data/}
workdir: src
resources:
  job_recovery:
    recover_on_exit_codes: 29
    max_restarts_on_errors: 1
    strategy: eager_next_region
  cpus: "2+"
name: train
`,
		"secret value changed":  strings.Replace(keyTask, "hunter2", "other", 1),
		"secret value removed":  strings.Replace(keyTask, "hunter2", "null", 1),
		"name changed":          strings.Replace(keyTask, "name: train", "name: train-again", 1),
		"defaults written out":  strings.Replace(keyTask, "run:", "num_nodes: 1\nrun:", 1),
		"cloud default written": strings.Replace(keyTask, "cpus: 2+", "cpus: 2+\n  cloud: local", 1),
		"webhook added":         strings.Replace(keyTask, "name: train", "name: train\nnotify: {webhooks: [{url: https://h.example.com/x}]}", 1),
		"priority given":        strings.Replace(keyTask, "name: train", "name: train\npriority: 900", 1),
	}
	for name, y := range same {
		if k := key(t, y, dir); k != base {
			t.Errorf("%s: key changed", name)
		}
	}
	different := map[string]string{
		"run changed":         strings.Replace(keyTask, "train.py\n", "train.py --lr 1\n", 1),
		"env changed":         strings.Replace(keyTask, `A: "1"`, `A: "2"`, 1),
		"secret name changed": strings.Replace(keyTask, "TOKEN", "TOKEN2", 1),
		"exit codes changed":  strings.Replace(keyTask, "[29]", "[29, 30]", 1),
		"bucket changed":      strings.Replace(keyTask, "s3://bucket/x", "s3://bucket/y", 1),
		"port added":          strings.Replace(keyTask, "cpus: 2+", "cpus: 2+\n  ports: 8080", 1),
		"accelerator set":     strings.Replace(keyTask, "cpus: 2+", "cpus: 2+\n  accelerators: {A100:1, H100:1}", 1),
	}
	for name, y := range different {
		if k := key(t, y, dir); k == base {
			t.Errorf("%s: key unchanged", name)
		}
	}
}

// A git workdir counts by its URL and ref; nothing local is read for it.
func TestInputKeyGitWorkdir(t *testing.T) {
	dir := t.TempDir()
	repo := "workdir: {url: https://github.com/org/repo.git, ref: v1}\nrun: make\n"
	base := key(t, repo, dir)
	if k := key(t, strings.Replace(repo, "{url", "{ url", 1), dir); k != base {
		t.Error("the same repository and ref changed the key")
	}
	for name, y := range map[string]string{
		"ref changed": strings.Replace(repo, "v1", "v2", 1),
		"url changed": strings.Replace(repo, "org/repo", "org/fork", 1),
		"no ref":      strings.Replace(repo, ", ref: v1", "", 1),
	} {
		if k := key(t, y, dir); k == base {
			t.Errorf("%s: key unchanged", name)
		}
	}
}

func TestInputKeyContent(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		same   bool
	}{
		{"one byte of a workdir file", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"src/train.py": "print('hI')\n"})
		}, false},
		{"a new workdir file", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"src/lib/new.py": ""})
		}, false},
		{"a file renamed", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "src/lib/util.py"), filepath.Join(dir, "src/lib/util2.py")))
		}, false},
		{"a file made executable", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "src/train.py"), 0o755))
		}, false},
		{"a mounted directory's file", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"data/sub/b.csv": "3,5\n"})
		}, false},
		{"a mounted single file", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"cfg.yaml": "lr: 0.2\n"})
		}, false},
		{"a symlink's target", func(t *testing.T, dir string) {
			must(t, os.Symlink("train.py", filepath.Join(dir, "src/link")))
		}, false},
		{"an ignored file", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"src/out.log": "more noise", "src/lib/deep.log": "x"})
		}, true},
		{"a file in an ignored directory", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"src/build/other.o": "x"})
		}, true},
		{"a file under .git", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"src/.git/HEAD": "ref: refs/heads/dev\n"})
		}, true},
		{"group write bit only", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "src/train.py"), 0o664))
		}, true},
		{"a file outside the inputs", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"elsewhere.txt": "x"})
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := keyFixture(t)
			before := key(t, keyTask, dir)
			tt.change(t, dir)
			after := key(t, keyTask, dir)
			if (before == after) != tt.same {
				t.Errorf("key same = %v, want %v", before == after, tt.same)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestInputKeySortieignoreReplacesGitignore(t *testing.T) {
	dir := keyFixture(t)
	// With .sortieignore present, .gitignore's *.log no longer applies.
	writeTree(t, dir, map[string]string{"src/.sortieignore": "lib/\n"})
	before := key(t, keyTask, dir)
	writeTree(t, dir, map[string]string{"src/lib/util.py": "changed"})
	if key(t, keyTask, dir) != before {
		t.Error("file under a .sortieignore'd directory changed the key")
	}
	writeTree(t, dir, map[string]string{"src/out.log": "changed"})
	if key(t, keyTask, dir) == before {
		t.Error(".gitignore still applied next to a .sortieignore")
	}
}

func TestInputKeyMissingSource(t *testing.T) {
	dir := t.TempDir()
	_, err := InputKey(mustParse(t, "workdir: ./nope\nrun: x").Tasks[0], dir)
	if err == nil || !strings.Contains(err.Error(), "hash workdir ./nope") {
		t.Errorf("err = %v, want it to name the workdir", err)
	}
}

func TestPipelineKey(t *testing.T) {
	dir := keyFixture(t)
	one := mustParse(t, keyTask)
	k1, err := PipelineKey(one, dir)
	must(t, err)
	if k1 != key(t, keyTask, dir) {
		t.Error("a one-task pipeline's key is not its task's key")
	}
	ab := mustParse(t, "run: a\n---\nrun: b\n")
	ba := mustParse(t, "run: b\n---\nrun: a\n")
	kab, err := PipelineKey(ab, dir)
	must(t, err)
	kba, err := PipelineKey(ba, dir)
	must(t, err)
	if kab == kba {
		t.Error("task order does not change the pipeline key")
	}
}

func TestIgnoreMatcher(t *testing.T) {
	m := parseIgnore(`# comment

*.log
!keep.log
/top.txt
build/
docs/**/*.md
**/cache
a/b
\#hash
`)
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"x.log", false, true},
		{"deep/dir/x.log", false, true},
		{"keep.log", false, false},
		{"deep/keep.log", false, false},
		{"top.txt", false, true},
		{"sub/top.txt", false, false},
		{"build", true, true},
		{"sub/build", true, true},
		{"build", false, false},
		{"docs/x.md", false, true},
		{"docs/a/b/x.md", false, true},
		{"docs/x.txt", false, false},
		{"cache", true, true},
		{"x/y/cache", false, true},
		{"a/b", false, true},
		{"z/a/b", false, false},
		{"#hash", false, true},
		{"comment", false, false},
	}
	for _, tt := range tests {
		if got := m.ignored(tt.path, tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
	inside := parseIgnore("out/**\n")
	if inside.ignored("out", true) || !inside.ignored("out/x", false) {
		t.Error(`"out/**" must match what is inside out, not out itself`)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	p := mustParse(t, keyTask)
	b, err := p.Marshal()
	must(t, err)
	if strings.Contains(string(b), "hunter2") {
		t.Fatalf("stored JSON holds a secret value: %s", b)
	}
	got, err := Unmarshal(b, testClouds())
	must(t, err)
	want := p.WithoutSecretValues()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, ok := got.Tasks[0].Secrets["TOKEN"]; !ok {
		t.Error("secret name lost")
	}
	if *p.Tasks[0].Secrets["TOKEN"] != "hunter2" {
		t.Error("WithoutSecretValues changed the original")
	}
	for _, bad := range []string{`{`, `{"tasks": []}`, `{"tasks": [null]}`} {
		if _, err := Unmarshal([]byte(bad), testClouds()); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}

// TestIgnoreMatchingIsLinearInThePath: a .gitignore of nested "**" made
// the recursive matcher try every split at every "**", which did not end
// in minutes. The matcher compares each pattern segment with each path
// segment at most a few times.
func TestIgnoreMatchingIsLinearInThePath(t *testing.T) {
	pattern := strings.Repeat("**/a/", 12) + "b\n"
	m := parseIgnore(pattern)
	path := strings.TrimSuffix(strings.Repeat("a/", 40), "/")
	if m.ignored(path, false) {
		t.Errorf("%q matched %q", pattern, path)
	}
	segs, parts := len(m.rules[0].segs), 40
	if limit := 2 * (segs + 1) * (parts + 1); m.steps > limit {
		t.Errorf("%d segment comparisons for %d pattern and %d path segments; want at most %d", m.steps, segs, parts, limit)
	}
	if !m.ignored(path+"/b", false) {
		t.Errorf("%q does not match %q", pattern, path+"/b")
	}
	for _, tt := range []struct {
		pattern, path string
		want          bool
	}{
		{"a/**/b\n", "a/b", true},
		{"a/**/b\n", "a/x/y/b", true},
		{"a/**/b\n", "a/x/y/c", false},
		{"**/x/**\n", "x", false},
		{"**/x/**\n", "p/x/q", true},
		{"x/**/**/y\n", "x/y", true},
		{"*.go\n", "a/b.go", true},
	} {
		if got := parseIgnore(tt.pattern).ignored(tt.path, false); got != tt.want {
			t.Errorf("%q on %q = %v; want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

// TestInputKeyWalkIsBounded: a workdir too large, or an ignore file too
// costly, is refused saying what to do, rather than holding up a launch.
func TestInputKeyWalkIsBounded(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"w/a": "1", "w/b": "2", "w/c/d": "3", "w/.gitignore": "**/x/**/y\nz\n"})
	if _, err := walk(filepath.Join(dir, "w")); err != nil {
		t.Fatal(err)
	}
	limits := keyWalkLimits()
	limits.entries = 3
	if _, err := walkWithin(filepath.Join(dir, "w"), limits); err == nil || !strings.Contains(err.Error(), "holds more than 3 files and directories") {
		t.Errorf("walk over the entry limit: %v", err)
	}
	limits = keyWalkLimits()
	limits.matchSteps = 2
	if _, err := walkWithin(filepath.Join(dir, "w"), limits); err == nil || !strings.Contains(err.Error(), "takes more than 2 comparisons") {
		t.Errorf("walk over the matching limit: %v", err)
	}
}
