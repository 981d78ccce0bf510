package schema

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ignoreFiles are read from the root of a walked directory, first found
// wins: like SkyPilot's .skyignore, a .sortieignore replaces .gitignore
// rather than adding to it, so a user can upload files git ignores.
func ignoreFiles() []string { return []string{".sortieignore", ".gitignore"} }

// ignoreRule is one line of an ignore file.
type ignoreRule struct {
	negate  bool
	dirOnly bool
	// segs is the pattern split at "/"; "**" stands for any number of
	// directories. Unanchored patterns start with "**".
	segs []string
}

// ignoreMatcher implements the common part of gitignore: blank and "#"
// lines, "!" negation, "name", globs (*, ?, [abc]) within a path segment,
// "dir/" for directories only, a leading or inner "/" anchoring to the root,
// and "**" for any depth. Not supported: ignore files below the root,
// .git/info/exclude and global excludes, and trailing spaces kept by "\ ".
type ignoreMatcher struct {
	rules []ignoreRule
}

// loadIgnore reads the ignore file at the root of dir, if any.
func loadIgnore(dir string) (*ignoreMatcher, error) {
	for _, name := range ignoreFiles() {
		b, err := ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return parseIgnore(string(b)), nil
	}
	return &ignoreMatcher{}, nil
}

func parseIgnore(text string) *ignoreMatcher {
	m := &ignoreMatcher{}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		line = strings.TrimRight(line, " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\#`) || strings.HasPrefix(line, `\!`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			continue
		}
		if !anchored {
			r.segs = append(r.segs, "**")
		}
		for _, s := range strings.Split(line, "/") {
			if s == "**" && len(r.segs) > 0 && r.segs[len(r.segs)-1] == "**" {
				continue
			}
			if s != "" {
				r.segs = append(r.segs, s)
			}
		}
		m.rules = append(m.rules, r)
	}
	return m
}

// ignored reports whether rel (slash-separated, relative to the root) is
// ignored; the last rule that matches decides, as in git.
func (m *ignoreMatcher) ignored(rel string, isDir bool) bool {
	if len(m.rules) == 0 {
		return false
	}
	parts := strings.Split(rel, "/")
	out := false
	for _, r := range m.rules {
		if r.dirOnly && !isDir {
			continue
		}
		if matchSegments(r.segs, parts) {
			out = !r.negate
		}
	}
	return out
}

func matchSegments(pat, parts []string) bool {
	if len(pat) == 0 {
		return len(parts) == 0
	}
	if pat[0] == "**" {
		if len(pat) == 1 {
			// "dir/**" is everything inside dir, not dir itself.
			return len(parts) > 0
		}
		for i := 0; i <= len(parts); i++ {
			if matchSegments(pat[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	if ok, err := path.Match(pat[0], parts[0]); err != nil || !ok {
		return false
	}
	return matchSegments(pat[1:], parts[1:])
}
