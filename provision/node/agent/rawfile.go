package agent

import (
	"errors"
	"io/fs"
	"syscall"
)

// The node's small files are read and written with the system calls
// themselves: for each file it opens, os.Open also sets it non-blocking,
// tries to add it to the poller (which a regular file refuses) and sets it
// back, five calls more than the open, and the agent and the controller
// open a dozen of them per node.

// openRaw opens path with flags and perm, retrying an interrupted open.
func openRaw(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC, perm)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// ReadHead reads at most n bytes from the start of the file at path
// (n < 0: all of it).
func ReadHead(path string, n int64) ([]byte, error) {
	fd, err := openRaw(path, syscall.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	size := int64(512)
	if n >= 0 && n < size {
		size = n
	}
	buf := make([]byte, 0, size)
	for n < 0 || int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			grow := int64(2 * cap(buf))
			if n >= 0 && grow > n {
				grow = n
			}
			nb := make([]byte, len(buf), grow)
			copy(nb, buf)
			buf = nb
		}
		m, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m <= 0 {
			break
		}
		buf = buf[:len(buf)+m]
	}
	return buf, nil
}

// readFile reads the whole file at path.
func readFile(path string) ([]byte, error) { return ReadHead(path, -1) }

// writeRaw writes data to the file at path opened with flags (O_WRONLY
// and what the caller adds) and perm, and closes it.
func writeRaw(path string, data []byte, flags int, perm uint32) error {
	fd, err := openRaw(path, syscall.O_WRONLY|flags, perm)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		m, err := syscall.Write(fd, data)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			syscall.Close(fd)
			return &fs.PathError{Op: "write", Path: path, Err: err}
		}
		data = data[m:]
	}
	if err := syscall.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: path, Err: err}
	}
	return nil
}

// WriteNew writes data to a new file at path, with perm (less the umask);
// excl: one that is not there yet, else one truncated.
func WriteNew(path string, data []byte, perm fs.FileMode, excl bool) error {
	flags := syscall.O_CREAT | syscall.O_TRUNC
	if excl {
		flags |= syscall.O_EXCL
	}
	return writeRaw(path, data, flags, uint32(perm.Perm()))
}
