package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParse checks, for any input: Parse does not panic; a pipeline it
// returns reads back the same from storage (Marshal/Unmarshal) and from
// its raw form (ApplySet with nothing to set, which re-decodes it as a
// file), with the same canonical spec and so the same input key; no
// secret's value is ever shown in an error or a warning; and input that
// is not UTF-8 is refused, never stored changed.
func FuzzParse(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	f.Add([]byte("secrets: {TOKEN: hunter2-secret}\nrun: [hunter2-secret]\n"))
	f.Add([]byte("envs: {A: $B, B: x}\nfile_mounts: {/m: $A}\nrun: x\n"))
	f.Add([]byte("{run: \"echo first\"} {run: \"echo second\"}\n"))
	f.Add([]byte("run: x\nenvs: {A: \"a\xffb\"}\nresources: {cpus: 12345678901234567890123, memory: .inf}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, testClouds())
		if err != nil {
			checkNoSecretShown(t, data, err.Error())
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("input that is not UTF-8 was accepted: %q", data)
		}
		checkNoSecretShown(t, data, strings.Join(p.Warnings, "\n"))
		b, err := p.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if bytes.Contains(b, []byte("hunter2-secret")) {
			t.Errorf("a secret value is stored: %s", b)
		}
		stored, err := Unmarshal(b, testClouds())
		if err != nil {
			t.Fatalf("Unmarshal: %v", err)
		}
		ignore := []cmp.Option{cmpopts.IgnoreFields(Pipeline{}, "Warnings"), cmpopts.EquateEmpty()}
		if diff := cmp.Diff(p.WithoutSecretValues(), stored, ignore...); diff != "" {
			t.Errorf("Marshal/Unmarshal changed the pipeline (-parsed +stored):\n%s", diff)
		}
		again, _, err := ApplySet(p, nil, testClouds())
		if err != nil {
			t.Fatalf("the parsed pipeline does not parse again: %v", err)
		}
		if diff := cmp.Diff(p, again, ignore...); diff != "" {
			t.Errorf("parsing again changed the pipeline (-first +again):\n%s", diff)
		}
		for i := range p.Tasks {
			first, err1 := canonicalSpec(p.Tasks[i])
			second, err2 := canonicalSpec(again.Tasks[i])
			if err1 != nil || err2 != nil || !bytes.Equal(first, second) {
				t.Errorf("task %d: input key spec changed:\n%s\n%s (%v, %v)", i, first, second, err1, err2)
			}
		}
	})
}

// checkNoSecretShown fails when an error shows the value of a secret the
// file sets, unless that text is also written elsewhere in the file.
func checkNoSecretShown(t *testing.T, data []byte, msg string) {
	t.Helper()
	for _, doc := range splitDocuments(data) {
		v, _, err := decodeYAML(doc.text)
		if err != nil {
			continue
		}
		m, _ := v.(map[string]any)
		secrets, _ := m["secrets"].(map[string]any)
		for _, sv := range secrets {
			s, ok := scalarString(sv)
			if !ok || len(s) < 4 || bytes.Count(data, []byte(s)) > 1 {
				continue
			}
			if strings.Contains(msg, s) {
				t.Errorf("error shows a secret's value %q:\n%s", s, msg)
			}
		}
	}
}

// seedFiles are the task files of testdata, valid and invalid.
func seedFiles(f *testing.F) [][]byte {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	var out [][]byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzApplySet checks, for any task file and any --set assignment:
// ApplySet does not panic and never changes its input; an assignment that
// is not UTF-8 is refused; a value set below secrets is never shown, in
// an error or in the overrides; and a result reads back the same when
// decoded again, with the same canonical spec.
func FuzzApplySet(f *testing.F) {
	assignments := []string{"resources.memory=32", "envs.A=x", "secrets.TOKEN=[hunter2-secret",
		"secrets={TOKEN: hunter2-secret", `envs.A="a" "b"`, "name=renamed", "envs.A=a\xffb",
		"resources.cpus=.inf", "tasks[0].run=echo hi", "resources.any_of[0].region=us-east-1", "secrets.TOKEN=*hunter2-secret"}
	for i, b := range seedFiles(f) {
		f.Add(b, assignments[i%len(assignments)])
	}
	f.Add([]byte(setBase), "secrets.TOKEN=\"hunter2-secret\\q\"")
	f.Fuzz(func(t *testing.T, data []byte, assignment string) {
		p, err := Parse(data, testClouds())
		if err != nil {
			return
		}
		before := p.Clone()
		out, overrides, err := ApplySet(p, []string{assignment}, testClouds())
		if diff := cmp.Diff(before, p); diff != "" {
			t.Fatalf("ApplySet changed its input (-before +after):\n%s", diff)
		}
		secret := secretValue(assignment)
		if secret != "" && bytes.Contains(data, []byte(secret)) {
			secret = "" // written elsewhere too: seeing it proves nothing
		}
		if err != nil {
			if secret != "" && strings.Contains(err.Error(), secret) {
				t.Errorf("error shows the secret value %q:\n%v", secret, err)
			}
			return
		}
		if !utf8.ValidString(assignment) {
			t.Fatalf("an assignment that is not UTF-8 was accepted: %q", assignment)
		}
		for _, o := range overrides {
			if secret != "" && (strings.Contains(o.Old, secret) || strings.Contains(o.New, secret)) {
				t.Errorf("override shows the secret value %q: %+v", secret, o)
			}
		}
		again, _, err := ApplySet(out, nil, testClouds())
		if err != nil {
			t.Fatalf("the result does not parse again: %v", err)
		}
		ignore := []cmp.Option{cmpopts.IgnoreFields(Pipeline{}, "Warnings"), cmpopts.EquateEmpty()}
		if diff := cmp.Diff(out, again, ignore...); diff != "" {
			t.Errorf("parsing the result again changed it (-first +again):\n%s", diff)
		}
		for i := range out.Tasks {
			first, err1 := canonicalSpec(out.Tasks[i])
			second, err2 := canonicalSpec(again.Tasks[i])
			if err1 != nil || err2 != nil || !bytes.Equal(first, second) {
				t.Errorf("task %d: input key spec changed:\n%s\n%s (%v, %v)", i, first, second, err1, err2)
			}
		}
	})
}

// secretValue is the value of an assignment to a path below secrets, at
// least four bytes long, or "".
func secretValue(assignment string) string {
	path, value, _ := strings.Cut(assignment, "=")
	if m := taskPrefix().FindStringSubmatch(strings.TrimSpace(path)); m != nil {
		path = m[2]
	}
	if path = strings.TrimSpace(path); path != "secrets" && !strings.HasPrefix(path, "secrets.") {
		return ""
	}
	// Quotes and brackets around the value are YAML's, not the secret's.
	value = strings.Trim(value, "\"'[]{} ")
	if len(value) < 4 {
		return ""
	}
	return value
}
