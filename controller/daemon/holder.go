package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"sortie/controller/home"
)

// The controller of a home is the process that holds the home's lock, an
// flock that the kernel drops with the process however it dies. The pid
// file is only a hint for people: a number in a file outlives its process
// (kill -9), may be deleted, and may name an unrelated process once the pid
// is reused. So sortie finds the controller through the lock itself, in
// the kernel's table of locks (/proc/locks), and reads the pid file only
// when that table cannot say, and then only while the lock is held and
// after checking that the process it names holds the lock file open.

// holder returns the pid of the process that holds h's controller lock,
// 0 when none does, or -1 when one does but which cannot be told.
func holder(h string) int {
	fi, err := os.Stat(home.Lock(h))
	if err != nil {
		return 0 // no lock file: no controller ever ran here
	}
	if pid, ok := lockTable(fi); ok {
		return pid
	}
	// No lock table to read: probe the lock, and trust the pid file only
	// while the lock is held, for a process that has the lock file open.
	if !held(h) {
		return 0
	}
	if p := pidFile(h); p > 0 && hasOpen(p, fi) {
		return p
	}
	return -1
}

// lockTable reads /proc/locks for an exclusive flock on the file fi: the
// holder's pid, 0 for none; ok is false when the table cannot be read, or
// shows a holder whose pid this process cannot see (another pid namespace).
func lockTable(fi fs.FileInfo) (pid int, ok bool) {
	st, isUnix := fi.Sys().(*syscall.Stat_t)
	if !isUnix {
		return 0, false
	}
	dev := uint64(st.Dev)
	major, minor := (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 14074 fe:00:9977862 0 EOF"; a waiter's
		// line has "->" after the number.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "WRITE" || fields[5] != want {
			continue
		}
		p, err := strconv.Atoi(fields[4])
		if err != nil || p <= 0 {
			return 0, false
		}
		return p, true
	}
	return 0, sc.Err() == nil
}

// held probes h's lock without taking it for long: a shared lock is
// refused while a controller holds it exclusively.
func held(h string) bool {
	f, err := os.Open(home.Lock(h))
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// hasOpen says whether process pid has the file fi open.
func hasOpen(pid int, fi fs.FileInfo) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if o, err := os.Stat(dir + "/" + fd.Name()); err == nil && os.SameFile(o, fi) {
			return true
		}
	}
	return false
}

// pidFile returns the number in h's pid file, or 0.
func pidFile(h string) int {
	b, err := os.ReadFile(home.PID(h))
	if err != nil {
		return 0
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || p <= 0 {
		return 0
	}
	return p
}
