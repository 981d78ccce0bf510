package cli

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"sortie/controller/contract"
)

// `sortie --version` and `sortie version` name the Go release the program
// was built with; `version` says too whether the controller runs.
func TestVersion(t *testing.T) {
	for _, argv := range [][]string{{"--version"}, {"version"}} {
		f, out, errb := testFactory()
		home := t.TempDir()
		f.Getenv = func(k string) string {
			if k == "SORTIE_HOME" {
				return home
			}
			return ""
		}
		if code := Execute(f, argv); code != ExitOK {
			t.Fatalf("sortie %v: exit %d, stderr %s", argv, code, errb)
		}
		if !strings.Contains(out.String(), "sortie ") || !strings.Contains(out.String(), runtime.Version()) {
			t.Errorf("sortie %v printed %q, want the module and %s", argv, out, runtime.Version())
		}
		if argv[0] == "version" && !strings.Contains(out.String(), "controller: not running, home "+home) {
			t.Errorf("sortie version printed %q, want it to say no controller runs", out)
		}
	}
}

// A running controller's version is read from its executable: here this
// test's own.
func TestVersionOfFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	v, err := contract.VersionOfFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if v.Go != runtime.Version() || !strings.HasPrefix(v.String(), "sortie ") {
		t.Errorf("VersionOfFile(%s) = %+v (%s)", exe, v, v)
	}
}

// Through a server (SORTIE_API_URL), the controller that drives the jobs
// is the server's: version names it rather than saying that this
// machine's home has none running.
func TestVersionThroughAServerNamesIt(t *testing.T) {
	f, out, errb := testFactory()
	env := map[string]string{"SORTIE_HOME": t.TempDir(), "SORTIE_API_URL": "https://sortie.example.com:8443", "SORTIE_TOKEN": "sortie_x"}
	f.Getenv = func(k string) string { return env[k] }
	if code := Execute(f, []string{"version"}); code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, errb)
	}
	if want := "controller: the server's, at https://sortie.example.com:8443 (its version is not asked)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("sortie version printed %q, want %q", out, want)
	}
	if strings.Contains(out.String(), "not running") {
		t.Errorf("sortie version says no controller runs, though the jobs go through a server: %q", out)
	}
}
