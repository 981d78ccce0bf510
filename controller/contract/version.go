package contract

import (
	"cmp"
	"debug/buildinfo"
	"fmt"
	"runtime/debug"
)

// Version is what a sortie program was built from: its module's version,
// the VCS revision and whether the tree had changes, and the Go release.
type Version struct {
	Module   string `json:"module"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// VersionOf reads a build's version from its build info.
func VersionOf(bi *debug.BuildInfo) Version {
	v := Version{Module: bi.Main.Version, Go: bi.GoVersion}
	v.Module = cmp.Or(v.Module, "(devel)")
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// OwnVersion is the running program's version.
func OwnVersion() Version {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version{Module: "(unknown)"}
	}
	return VersionOf(bi)
}

// VersionOfFile is the version of the program in the file at path (a
// running one's /proc/PID/exe included).
func VersionOfFile(path string) (Version, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return Version{}, err
	}
	return VersionOf(bi), nil
}

// String says the version in one line: "sortie (devel), revision
// 09fbe15 (modified), go1.23.4".
func (v Version) String() string {
	s := "sortie " + v.Module
	if v.Revision != "" {
		r := v.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		s += ", revision " + r
		if v.Modified {
			s += " (modified)"
		}
	} else {
		s += ", no VCS revision recorded"
	}
	return fmt.Sprintf("%s, %s", s, v.Go)
}
