package smoke_tests

import (
	"bufio"
	"os"
	"os/exec"

	"strings"
	"testing"
)

// TestLayout holds each package to the README's "Where things are" table:
// none of what a package depends on, directly or not, may match what its
// row says it must not import.
func TestLayout(t *testing.T) {
	rows := layoutRows(t)
	if len(rows) < 10 {
		t.Fatalf("found %d rows in README.md's Where things are table; is the table still there?", len(rows))
	}
	for _, r := range rows {
		for _, pkg := range r.packages {
			out, err := exec.Command("go", "list", "-deps", "sortie/"+pkg).CombinedOutput()
			if err != nil {
				t.Errorf("go list -deps sortie/%s: %v\n%s", pkg, err, out)
				continue
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == "sortie/"+pkg {
					continue
				}
				for _, ban := range r.banned {
					if matchImport(ban, dep) {
						t.Errorf("%s depends on %s, which README.md says it must not import (%s)", pkg, dep, ban)
					}
				}
			}
		}
	}
}

type layoutRow struct{ packages, banned []string }

// layoutRows reads the table under "## Where things are": its first column
// names packages, its last what they must not import, both in backticks.
func layoutRows(t *testing.T) []layoutRow {
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []layoutRow
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Where things are"
		case in && strings.HasPrefix(line, "| `"):
			cols := strings.Split(line, " | ")
			var r layoutRow
			for _, m := range backticked.FindAllStringSubmatch(cols[0], -1) {
				r.packages = append(r.packages, m[1])
			}
			for _, m := range backticked.FindAllStringSubmatch(cols[len(cols)-1], -1) {
				r.banned = append(r.banned, m[1])
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// matchImport says whether path is pattern, or under it when pattern ends
// in "/...".
func matchImport(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}
