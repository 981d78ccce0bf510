package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The home holds task specs, env values, commands, logs and secrets: it and
// everything sortie creates in it are private to its owner, as ~/.ssh is.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// Make creates home, private to its owner, when it is missing. A home that
// exists keeps its mode; Exposed reports it. The store creates its own
// file (0600), wherever it is, and none in the home when it is PostgreSQL.
func Make(h string) error {
	if err := os.MkdirAll(h, DirMode); err != nil {
		return fmt.Errorf("create SORTIE_HOME: %w", err)
	}
	return nil
}

// maxExposedWalk bounds the files Exposed looks at, so that a home holding
// many kept logs answers at once.
const maxExposedWalk = 10000

// Exposed names what in home other users can read or write: home itself,
// and the files and directories sortie keeps there (the store and its
// journal, config, the controller's log, kept logs, secrets). The clouds'
// own trees (the local provider's node directories, where tasks write with
// their own umask) are left out: a private home keeps them private. Nil
// when everything is private.
func Exposed(h string) ([]string, error) {
	var out []string
	n := 0
	err := filepath.WalkDir(h, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == h {
				return err
			}
			return nil
		}
		if n++; n > maxExposedWalk {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(h, path)
		if d.IsDir() && path != h && (rel == "local" || rel == "sim") {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if fi.Mode().Perm()&0o077 != 0 {
			out = append(out, fmt.Sprintf("%s (%s)", path, fi.Mode().Perm()))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("look at SORTIE_HOME %s: %w", h, err)
	}
	return out, nil
}

// ExposedWarning says, in one line, that home is open to other users and
// the command that makes it private; "" when it is private.
func ExposedWarning(h string) (string, error) {
	exposed, err := Exposed(h)
	if err != nil || len(exposed) == 0 {
		return "", err
	}
	shown := exposed
	more := ""
	if len(shown) > 3 {
		shown, more = shown[:3], fmt.Sprintf(" and %d more", len(exposed)-3)
	}
	return fmt.Sprintf("SORTIE_HOME is open to other users, who can read its specs, env values and logs: %s%s; make it private with: chmod -R go-rwx %s",
		strings.Join(shown, ", "), more, shellQuote(h)), nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+,:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
