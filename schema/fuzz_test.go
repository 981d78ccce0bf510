package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParse checks, for any input: Parse does not panic; a pipeline it
// returns reads back the same from storage (Marshal/Unmarshal) and from
// its raw form (ApplySet with nothing to set, which re-decodes it as a
// file), with the same canonical spec and so the same input key; and no
// secret's value is ever shown in an error.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("secrets: {TOKEN: hunter2-secret}\nrun: [hunter2-secret]\n"))
	f.Add([]byte("envs: {A: $B, B: x}\nfile_mounts: {/m: $A}\nrun: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			checkNoSecretShown(t, data, err.Error())
			return
		}
		b, err := p.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if bytes.Contains(b, []byte("hunter2-secret")) {
			t.Errorf("a secret value is stored: %s", b)
		}
		stored, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("Unmarshal: %v", err)
		}
		ignore := []cmp.Option{cmpopts.IgnoreFields(Pipeline{}, "Warnings"), cmpopts.EquateEmpty()}
		if diff := cmp.Diff(p.WithoutSecretValues(), stored, ignore...); diff != "" {
			t.Errorf("Marshal/Unmarshal changed the pipeline (-parsed +stored):\n%s", diff)
		}
		again, _, err := ApplySet(p, nil)
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
