package node

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"sortie/provision"
)

// FilesTooLarge is a task's files past the most a provider takes.
type FilesTooLarge struct {
	Field string // the task field whose files went over: workdir, file_mounts.DST
	Limit int64
}

func (e *FilesTooLarge) Error() string {
	return fmt.Sprintf("%s: its files, with the task's other files, are over %d KiB, the most sortie hands over with the task on this cloud; put large data in the image, or fetch it in the task's setup", e.Field, e.Limit/1024)
}

// Files reads local (a directory, skipping .git, or a regular file) as the
// files a task is handed under remote: a directory's files at their
// relative paths below it. Symbolic links are followed to regular files;
// other kinds of file are left out. used is the byte count read so far;
// past limit (when positive) it stops with a *FilesTooLarge naming field.
func Files(local, remote, field string, used *int64, limit int64) ([]provision.File, error) {
	info, err := os.Stat(local)
	if err != nil {
		return nil, err
	}
	if info.Mode().IsRegular() {
		f, err := readFile(local, remote, info, field, used, limit)
		if err != nil {
			return nil, err
		}
		return []provision.File{f}, nil
	}
	if !info.IsDir() {
		return nil, provision.Prechecks(fmt.Errorf("%s: %s is neither a directory nor a regular file", field, local))
	}
	var out []provision.File
	err = filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && p != local {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(p)
		if err != nil || !info.Mode().IsRegular() {
			return nil // a dangling link, a socket: not a file to hand over
		}
		rel, err := filepath.Rel(local, p)
		if err != nil {
			return err
		}
		f, err := readFile(p, path.Join(remote, filepath.ToSlash(rel)), info, field, used, limit)
		if err != nil {
			return err
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

func readFile(local, remote string, info fs.FileInfo, field string, used *int64, limit int64) (provision.File, error) {
	if limit > 0 && *used+info.Size() > limit {
		return provision.File{}, &FilesTooLarge{Field: field, Limit: limit}
	}
	b, err := os.ReadFile(local)
	if err != nil {
		return provision.File{}, err
	}
	*used += int64(len(b))
	if limit > 0 && *used > limit {
		return provision.File{}, &FilesTooLarge{Field: field, Limit: limit}
	}
	return provision.File{Path: remote, Mode: uint32(info.Mode().Perm()), Data: b}, nil
}
