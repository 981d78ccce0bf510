package local

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sortie/provision/node/agent"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Node directories are kept for reuse. A local node is four directories
// (the node's, its HOME, the attempt's, the attempt's workdir), made at its
// launch and start and removed at its teardown. On a disk that makes each
// new directory cost a search for a free inode and a block, which grows
// with what was removed in the last minutes (ext4 without a journal skips
// every inode freed lately), that was most of what a short local job cost
// sortie. So a teardown that finds a node's directories as a start makes
// them, once emptied of what the task and its agent left, moves them aside
// whole, and the next launch of a node moves them into place, its
// attempt's directory renamed to the new attempt's number.
//
// The kept directories are this process's own, under
// local/spare/PID.NONCE; a process that finds another's there whose
// process is gone removes them. A node's directories are kept only when
// they are exactly what a start makes, with the modes it gives them and
// this user's; anything else is removed as before. Nothing a task wrote
// is ever kept: only empty directories are.

// maxSpares bounds the node directories a process keeps.
const maxSpares = 32

// spares are the node directories this process keeps for reuse in home.
type spares struct {
	mu       sync.Mutex
	dir      string   // this process's, made at the first keep
	free     []string // kept node directories in dir
	clusters []string // kept (empty) cluster directories in dir
	seq      uint64
	// noReplaceless: this file system cannot rename without replacing
	// (RENAME_NOREPLACE), so no cluster directory is kept.
	noReplaceless bool
}

var sparesByHome sync.Map // home → *spares

func (p *Provider) spares() *spares {
	s, _ := sparesByHome.LoadOrStore(p.home, &spares{})
	return s.(*spares)
}

// spareRoot holds every process's kept node directories.
func spareRoot(home string) string { return filepath.Join(root(home), "spare") }

// take moves a kept node directory to path (which must not exist), its
// attempt's directory renamed to attempt-N; false when none is kept, or
// when the move failed (path is then as it was).
func (s *spares) take(path string, attempt int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.free) > 0 {
		name := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		from := filepath.Join(s.dir, name)
		kept, ok := keptAttempt(from)
		if !ok {
			os.RemoveAll(from)
			continue
		}
		if want := "attempt-" + strconv.Itoa(attempt); kept != want {
			if err := os.Rename(filepath.Join(from, kept), filepath.Join(from, want)); err != nil {
				os.RemoveAll(from)
				continue
			}
		}
		if err := os.Rename(from, path); err != nil {
			os.RemoveAll(from)
			return false
		}
		return true
	}
	return false
}

// takeCluster moves a kept cluster directory to path, which must not
// exist: fs.ErrExist when it does, another error when none is kept or the
// move failed otherwise (path is then as it was).
func (s *spares) takeCluster(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.clusters) > 0 {
		name := s.clusters[len(s.clusters)-1]
		from := filepath.Join(s.dir, name)
		err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			return fs.ErrExist // kept for the next launch
		}
		s.clusters = s.clusters[:len(s.clusters)-1]
		if err == nil {
			return nil
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			s.noReplaceless = true
		}
		os.RemoveAll(from)
	}
	return fs.ErrNotExist
}

// keepCluster moves cluster directory dir aside for reuse when it holds
// nothing but its old record (spareRecord) and is as a launch makes it;
// false: the caller removes it.
func (s *spares) keepCluster(home, dir string) bool {
	s.mu.Lock()
	off := s.noReplaceless
	s.mu.Unlock()
	names, ok := dirNames(dir)
	if off || !ok || len(names) > 1 || len(names) == 1 && (names[0] != spareRecord || !plainFile(filepath.Join(dir, spareRecord))) || !plainDir(dir, 0o700) {
		return false
	}
	return s.keepDir(home, dir, &s.clusters, "cluster.")
}

// spareRecord is the name a torn-down cluster's record is renamed to, so
// that the next record written in its directory reuses its inode.
const spareRecord = ".record"

// plainFile says whether path is a regular file of this user's, with no
// other name (no link to it is elsewhere).
func plainFile(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && st.Nlink == 1
}

// writeRecord writes rec as the record of the cluster built in dir: into
// the old record a kept directory holds (else a new file), then renamed to
// its place. The build directory is nobody's until its own rename.
func writeRecord(dir string, rec *record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	spare := filepath.Join(dir, spareRecord)
	if err := agent.WriteNew(spare, append(b, '\n'), 0o600, false); err != nil {
		return err
	}
	return os.Rename(spare, filepath.Join(dir, recordFile))
}

// keptAttempt names the attempt directory of a kept node directory.
func keptAttempt(dir string) (string, bool) {
	names, _ := dirNames(dir)
	for _, n := range names {
		if strings.HasPrefix(n, "attempt-") {
			return n, true
		}
	}
	return "", false
}

// keep empties node directory dir of what its task and agent left and
// moves it aside for reuse. false: dir is not as a start makes a node
// (or there are enough kept), and the caller removes it as it is.
func (s *spares) keep(home, dir string) bool {
	if !emptyNode(dir) {
		return false
	}
	return s.keepDir(home, dir, &s.free, "node.")
}

// keepDir moves dir into this process's directory of kept ones, named
// prefix and a number, and adds it to list.
func (s *spares) keepDir(home, dir string, list *[]string, prefix string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(*list) >= maxSpares {
		return false
	}
	if s.dir == "" {
		d, err := makeSpareDir(home)
		if err != nil {
			return false
		}
		s.dir = d
	}
	s.seq++
	name := prefix + strconv.FormatUint(s.seq, 10)
	if err := os.Rename(dir, filepath.Join(s.dir, name)); err != nil {
		return false
	}
	*list = append(*list, name)
	return true
}

// makeSpareDir makes this process's directory of kept node directories,
// after removing those of processes that are gone.
func makeSpareDir(home string) (string, error) {
	r := spareRoot(home)
	if entries, err := os.ReadDir(r); err == nil {
		for _, e := range entries {
			pid, _, _ := strings.Cut(e.Name(), ".")
			if n, err := strconv.Atoi(pid); err == nil && n > 0 && !processAlive(n) {
				os.RemoveAll(filepath.Join(r, e.Name()))
			}
		}
	}
	if err := os.MkdirAll(r, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(r, strconv.Itoa(os.Getpid())+".")
}

// processAlive says whether process pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// emptyNode empties node directory dir for reuse: it must hold its HOME and
// one attempt's directory with its workdir, each a directory of this
// user's with the mode a start gives it; the task's files in HOME and
// workdir and the agent's in the attempt's directory are removed. It says
// whether dir is now that and nothing more.
func emptyNode(dir string) bool {
	if !plainDir(dir, 0o700) {
		return false
	}
	names, ok := dirNames(dir)
	if !ok || len(names) != 2 {
		return false
	}
	var attempt string
	for _, n := range names {
		switch {
		case n == homeName:
		case strings.HasPrefix(n, "attempt-") && attempt == "":
			attempt = n
		default:
			return false
		}
	}
	if attempt == "" {
		return false
	}
	home, a := filepath.Join(dir, homeName), filepath.Join(dir, attempt)
	w := filepath.Join(a, "workdir")
	if !plainDir(home, 0o700) || !plainDir(a, 0o777&^umask()) || !plainDir(w, 0o777&^umask()) {
		return false
	}
	return emptyDir(home, "") && emptyDir(a, "workdir") && emptyDir(w, "")
}

// plainDir says whether path is a directory (not a link to one) of this
// user's, with mode perm.
func plainDir(path string, perm fs.FileMode) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() || fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != perm {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// emptyDir removes everything in dir but the entry named but.
func emptyDir(dir, but string) bool {
	names, ok := dirNames(dir)
	if !ok {
		return false
	}
	for _, n := range names {
		if n == but {
			continue
		}
		if err := removeAll(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

func dirNames(dir string) ([]string, bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	return names, err == nil
}

// umask is this process's file mode creation mask, as the kernel shows it.
var umask = sync.OnceValue(func() fs.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return fs.FileMode(m)
				}
			}
		}
	}
	// Unknown: no kept directory matches, and none is kept.
	return fs.FileMode(0o7777)
})

// count is how many node and cluster directories are kept.
func (s *spares) count() (nodes, clusters int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.free), len(s.clusters)
}
