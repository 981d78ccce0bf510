package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestMakeCreatesAPrivateHome(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	h := filepath.Join(t.TempDir(), "home")
	if err := Make(h); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, h); m != 0o700 {
		t.Errorf("home is %v, want 0700", m)
	}
	if _, err := os.Stat(State(h)); !os.IsNotExist(err) {
		t.Errorf("Make created the store (%v): the store makes its own file, and none on PostgreSQL", err)
	}
	if got, err := Exposed(h); err != nil || got != nil {
		t.Errorf("Exposed(a new home) = %v, %v; want nothing", got, err)
	}
	// An existing home keeps its mode, and Make leaves the store as it is.
	if err := os.WriteFile(State(h), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Make(h); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(State(h)); string(b) != "data" {
		t.Errorf("Make changed the store: %q", b)
	}
	if m := mode(t, h); m != 0o755 {
		t.Errorf("Make changed an existing home's mode to %v", m)
	}
}

func TestExposedWarningNamesWhatOthersCanReadAndTheFix(t *testing.T) {
	h := filepath.Join(t.TempDir(), "my home")
	if err := Make(h); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(State(h), nil, FileMode); err != nil {
		t.Fatal(err)
	}
	if w, err := ExposedWarning(h); err != nil || w != "" {
		t.Fatalf("a private home: %q, %v", w, err)
	}
	// The local provider's node directories are the tasks' own.
	if err := os.MkdirAll(filepath.Join(h, "local", "clusters", "c", "node-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(h, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	if w, _ := ExposedWarning(h); w != "" {
		t.Errorf("the local provider's tree made a warning: %q", w)
	}
	for _, p := range []string{h, State(h)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(ControllerLog(h), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ControllerLog(h), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := ExposedWarning(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{h + " (-rwxr-xr-x)", State(h) + " (-rwxr-xr-x)", ControllerLog(h) + " (-rw-r--r--)", "chmod -R go-rwx '" + h + "'"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
}

// FuzzReadSecrets checks, for any kept secrets file: ReadSecrets does not
// panic; what it accepts are variable names with values an environment can
// hold; an error is ErrUnreadable and shows no part of the file.
func FuzzReadSecrets(f *testing.F) {
	for _, s := range []string{`{"TOKEN":"hunter2"}`, `{"TOKEN":hunter2}`, `{"1X":"v"}`, `{"A":"x\u0000"}`, `[]`, `null`, `{"A":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := t.TempDir()
		if err := os.MkdirAll(SecretsDir(h), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(Secrets(h, 7), data, 0o600); err != nil {
			t.Fatal(err)
		}
		v, err := ReadSecrets(h, 7)
		if err != nil {
			if !errors.Is(err, ErrUnreadable) {
				t.Errorf("error %v is not ErrUnreadable", err)
			}
			// Only what sortie says, never a piece of the file.
			p := Secrets(h, 7)
			if err.Error() != "cannot be read back: the secrets of job 7 in "+p+" are not a JSON object of strings" &&
				err.Error() != "cannot be read back: the secrets of job 7 in "+p+" hold a name that is no variable name, or a value with a NUL byte" {
				t.Errorf("error %q", err)
			}
			return
		}
		for k, val := range v {
			if !isVarName(k) || strings.ContainsRune(val, 0) {
				t.Errorf("accepted %q=%q", k, val)
			}
		}
	})
}
