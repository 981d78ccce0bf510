package agent

import "syscall"

// prSetDumpable is prctl's PR_SET_DUMPABLE.
const prSetDumpable = 4

// NotDumpable keeps the task, which runs as the same user, out of this
// process's memory (where the node's key is): a process that is not
// dumpable cannot be traced (ptrace) nor its /proc/PID/mem or environ read
// but by root. Its command line and state stay readable, which is how its
// liveness is checked.
func NotDumpable() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
