package suite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LaunchOptions times `sortie jobs launch -d` in a home whose controller
// runs.
type LaunchOptions struct {
	Bin  string
	Home string
	Runs int
}

// LaunchResult is the median and every run's time.
type LaunchResult struct {
	Median time.Duration
	Runs   []time.Duration
	IDs    []int64
}

// RunLaunchCLI launches a local `true` task Runs times, each from process
// start to exit, after one untimed launch that starts the controller; the
// controller is stopped at the end.
func RunLaunchCLI(ctx context.Context, o LaunchOptions) (*LaunchResult, error) {
	work := filepath.Join(o.Home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(work, "task.yaml")
	if err := os.WriteFile(file, []byte(localTask), 0o644); err != nil {
		return nil, err
	}
	run := func(args ...string) (time.Duration, string, error) {
		return runCLI(ctx, o.Bin, Environ(o.Home), work, args...)
	}
	defer run("controller", "stop") //nolint:errcheck // best effort: the home is thrown away
	r := &LaunchResult{}
	for i := 0; i <= o.Runs; i++ {
		d, out, err := run("jobs", "launch", "-d", file)
		if err != nil {
			return nil, err
		}
		id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("jobs launch -d printed %q, want a job id", out)
		}
		r.IDs = append(r.IDs, id)
		if i > 0 { // the first one also started the controller
			r.Runs = append(r.Runs, d)
		}
	}
	r.Median = Median(r.Runs)
	if _, _, err := run("controller", "stop"); err != nil {
		return r, err
	}
	return r, nil
}

// RunCLIInit times `sortie --help`, from process start to exit, runs times
// after one untimed run: what every command a user types pays before it
// does anything.
func RunCLIInit(ctx context.Context, bin, home string, runs int) (*LaunchResult, error) {
	r := &LaunchResult{}
	for i := 0; i <= runs; i++ {
		cmd := exec.CommandContext(ctx, bin, "--help")
		cmd.Env = Environ(home)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		el := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("%s --help: %w: %s", filepath.Base(bin), err, out)
		}
		if i > 0 {
			r.Runs = append(r.Runs, el)
		}
	}
	r.Median = Median(r.Runs)
	return r, nil
}
