package local

import (
	"os"
	"path/filepath"
)

// A node looks for the programs it runs (sortie-agent, and sortie-sync for
// a task with buckets) in the directory beside its attempts' directories
// named programsLink, where the node package's Start copies each program
// once per node and build, by its sha256. A local node's is a link to one
// directory of the home's, so that a program is copied there once per
// home and build rather than into every node: a new cluster per job would
// otherwise hash and copy the agent (megabytes) for every job. The start
// script, the copy and the agent are the same as on any node; only the
// place the link leads to is shared.
const programsLink = ".sortie-agent"

// programsDir is the home's directory of node programs.
func programsDir(home string) string { return filepath.Join(root(home), "programs") }

// linkPrograms makes node directory dir's programs directory a link to
// the home's.
func linkPrograms(home, dir string) error {
	if err := os.MkdirAll(programsDir(home), 0o700); err != nil {
		return err
	}
	return os.Symlink(programsDir(home), filepath.Join(dir, programsLink))
}
