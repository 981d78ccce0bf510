package suite

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sortie/provision/node/agent"
)

// orphans makes this process the subreaper of what the processes it starts
// detach (the node agents, which are the subreapers of their tasks) and
// reaps each agent once it ends, so that its CPU, and that of the children
// it waited for, is counted in this process's children's rusage, as a
// child's own is once it is waited for. Only sortie-agent processes are
// reaped here: every other child is waited for by whoever started it (the
// controller, by its exec.Cmd; a test's commands).
type orphans struct {
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// adoptOrphans starts adopting and reaping the node agents; finish undoes
// it.
func adoptOrphans() (*orphans, error) {
	if err := agent.Subreaper(true); err != nil {
		return nil, err
	}
	o := &orphans{stop: make(chan struct{})}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-o.stop:
				return
			case <-tick.C:
				o.reap()
			}
		}
	}()
	return o, nil
}

// reap reaps every adopted agent that has ended, and says how many are
// left running.
func (o *orphans) reap() int {
	left := 0
	for _, pid := range agent.Children() {
		if !isAgentProcess(pid) {
			continue
		}
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == 0 && err == nil {
			left++
		}
	}
	return left
}

// finish waits, for up to d, until every adopted child has ended and been
// reaped, then stops being a subreaper; an error says some are left.
// Calls after the first do nothing.
func (o *orphans) finish(d time.Duration) error {
	first := false
	o.once.Do(func() { first = true })
	if !first {
		return nil
	}
	close(o.stop)
	o.wg.Wait()
	deadline := time.Now().Add(d)
	for o.reap() > 0 {
		if time.Now().After(deadline) {
			agent.Subreaper(false)
			return errors.New("node agents still run after the controller stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	agent.Subreaper(false)
	return nil
}

// isAgentProcess says whether process pid runs the sortie-agent program,
// from its command name, which an ended process keeps until reaped.
func isAgentProcess(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
	return open >= 0 && end > open && string(stat[open+1:end]) == "sortie-agent"
}

// childrenCPU is the user and system CPU of this process's children that
// have been waited for, and theirs.
func childrenCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
