package schema

import (
	"os"
	"path"
	"path/filepath"
	"slices"
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
	// steps counts segment comparisons, for tests of the matcher's cost.
	steps int
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
		if m.matchSegments(r.segs, parts) {
			out = !r.negate
		}
	}
	return out
}

// matchSegments matches a rule's segments against a path's, "**" standing
// for any number of segments. It is wildcard matching with segments for
// characters: on a mismatch it goes back only to the latest "**" and lets
// it take one more segment, so it makes at most len(pat)*len(parts)
// segment comparisons; trying every split at every "**" in turn, as a
// recursive matcher does, grows exponentially with nested "**".
func (m *ignoreMatcher) matchSegments(pat, parts []string) bool {
	if n := len(pat); n > 1 && pat[n-1] == "**" {
		// "dir/**" is everything inside dir, not dir itself: the final
		// "**" takes at least one segment.
		pat = append(slices.Clone(pat[:n-1]), "*", "**")
	}
	p, n := 0, 0
	star, starN := -1, 0
	for n < len(parts) {
		switch {
		case p < len(pat) && pat[p] == "**":
			star, starN = p, n
			p++
		case p < len(pat) && m.matchSegment(pat[p], parts[n]):
			p++
			n++
		case star >= 0:
			starN++
			p, n = star+1, starN
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == "**" {
		p++
	}
	return p == len(pat)
}

func (m *ignoreMatcher) matchSegment(pat, part string) bool {
	m.steps++
	ok, err := path.Match(pat, part)
	return err == nil && ok
}
