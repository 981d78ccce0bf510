package clouds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/controller/clouds"
)

// namedCloudAllowed are the places outside provision/<cloud> and the
// registry that may name a cloud, each with why. A file listed names only
// the clouds listed with it.
var namedCloudAllowed = []struct{ file, cloud, why string }{
	{"schema/defaults.go", "local", "DefaultCloud: a task that names no place runs on this machine, as the task format says"},
	{"cmd/internal/cli/local.go", "local", "`sortie local preempt|capacity` make the weather of the local provider, by name"},
	{"controller/service/weather.go", "local", "the service side of `sortie local ...`: only the local provider's nodes can be preempted by hand"},
	{"controller/home/private.go", "local", "the directory the local provider keeps its nodes in, which the home's secrecy check skips (home imports nothing of ours)"},
	{"controller/home/private.go", "sim", "the directory the sim provider keeps its state in, likewise"},
	{"provision/node/notice/notice.go", "local", "SourceLocal names where a local node hears a notice (a request file), not a cloud"},
}

// namedCloudSkipped are trees whose programs run named clouds on purpose:
// the benchmark and chaos programs measure and storm local, sim and aws.
var namedCloudSkipped = []string{"smoke_tests/"}

// No code outside a cloud's provider (provision/<cloud>) and the registry
// names a cloud, by a string literal or by importing its provider:
// adding a cloud touches only those and its config section.
func TestOnlyTheRegistryNamesClouds(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range clouds.Known() {
		names[c.Name] = true
		for _, a := range c.Task.Aliases {
			names[a] = true
		}
	}
	allowed := func(file, cloud string) bool {
		for _, a := range namedCloudAllowed {
			if a.file == file && a.cloud == cloud {
				return true
			}
		}
		return false
	}
	used := map[[2]string]bool{}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "controller/clouds" {
				return filepath.SkipDir
			}
			for _, skip := range namedCloudSkipped {
				if rel+"/" == skip {
					return filepath.SkipDir
				}
			}
			if first, rest, _ := strings.Cut(rel, "/"); first == "provision" && names[strings.Split(rest, "/")[0]] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		report := func(pos token.Pos, cloud, what string) {
			if allowed(rel, cloud) {
				used[[2]string{rel, cloud}] = true
				return
			}
			t.Errorf("%s names cloud %q (%s): ask the registry (controller/clouds) instead, or allow it in namedCloudAllowed with why", fset.Position(pos), cloud, what)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, "sortie/provision/"); ok && names[strings.Split(rest, "/")[0]] {
				report(imp.Pos(), strings.Split(rest, "/")[0], "imports "+p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ImportSpec, *ast.Field:
				return false // import paths are read above; struct tags name config sections
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(n.Value); err == nil && names[strings.ToLower(s)] {
					report(n.Pos(), strings.ToLower(s), "a string literal")
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s; is it the module?", files, root)
	}
	for _, a := range namedCloudAllowed {
		if !used[[2]string{a.file, a.cloud}] {
			t.Errorf("namedCloudAllowed lets %s name %q, which it no longer does: drop the entry", a.file, a.cloud)
		}
	}
}
