package schema

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxFileSize bounds every file sortie reads whole as input: a task file,
// an ignore file. Real ones are a few kilobytes; the bound keeps /dev/zero
// or a runaway generator from filling memory.
const MaxFileSize = 16 << 20

// ReadFile reads a file given as input, refusing anything but a regular
// file (a FIFO would block forever, a device may never end) and anything
// over MaxFileSize. The file is opened without blocking and checked after
// it is open, so a path swapped for a FIFO between a check and the read
// cannot hang the reader.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file; give the path of a file", path, FileKind(info.Mode()))
	}
	if info.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is %d bytes, over the limit of %d (16 MiB)", path, info.Size(), MaxFileSize)
	}
	// The size can change after Stat: read one byte past the limit to know.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s grew over the limit of %d bytes (16 MiB) while it was read", path, MaxFileSize)
	}
	return b, nil
}

// FileKind names, with its article, what a path that is not a regular file
// is: "a directory", "a named pipe (FIFO)"...
func FileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
