// Command chaos is `make chaos`: jobs of known behaviour on the sim and
// local providers while the controller program is killed with SIGKILL again
// and again, then the invariants checked from the store, the clouds'
// records and the tasks' own log. It prints one line per provider:
//
//	sim: jobs 1000, kills 30, lost 0, duplicated 0, leaked 0, mismatched 0, changed 0 (...)
//
// and exits 1 when an invariant broke, naming the first breaks on stderr.
// See the README's Reliability section.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sortie/smoke_tests/chaos/storm"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "", "the sortie binary, with sortie-controller beside it (default: build both into the work directory)")
	work := fs.String("work", "", "directory for the runs' homes (default: a temporary one, removed at the end unless -keep)")
	keep := fs.Bool("keep", false, "keep the work directory (stores, controller logs, the tasks' log)")
	only := fs.String("only", "sim,local", "which runs: sim, local or both")
	simJobs := fs.Int("sim-jobs", 1000, "jobs on the sim provider")
	simKills := fs.Int("sim-kills", 30, "SIGKILLs of the controller during the sim run")
	simLimit := fs.Int("sim-limit", 0, "the sim run's limits.server.running_jobs, with limits.preemption: lower_priority (default: a sixteenth of -sim-jobs; -1: no limits)")
	localJobs := fs.Int("local-jobs", 40, "jobs on the local provider (a third of them two-node)")
	localKills := fs.Int("local-kills", 15, "SIGKILLs of the controller during the local run")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the tasks' behaviour and the kills' timing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *work == "" {
		dir, err := os.MkdirTemp("", "sortie-chaos-")
		if err != nil {
			fmt.Fprintln(stderr, "chaos:", err)
			return 1
		}
		*work = dir
		if !*keep {
			defer os.RemoveAll(dir)
		}
	}
	if *bin == "" {
		*bin = filepath.Join(*work, "bin", "sortie")
		fmt.Fprintf(stderr, "building %s\n", *bin)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Dir(*bin)+"/", "sortie/cmd/sortie", "sortie/cmd/sortie-controller", "sortie/cmd/sortie-agent")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(stderr, "chaos: go build:", err)
			return 1
		}
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 1
	}
	fmt.Fprintf(stderr, "seed %d, work %s\n", *seed, *work)
	failed := false
	for _, what := range strings.Split(*only, ",") {
		var r *storm.Result
		var err error
		switch strings.TrimSpace(what) {
		case "sim":
			limit := *simLimit
			if limit == 0 {
				limit = max(*simJobs/16, 1)
			}
			r, err = storm.RunSim(ctx, storm.Options{Bin: abs, Home: filepath.Join(*work, "sim"), Jobs: *simJobs, Kills: *simKills,
				KillMin: 2 * time.Second, KillMax: 5 * time.Second, Doubles: 3, Freeze: true, Seed: *seed,
				Timeout: 5 * time.Minute, Progress: stderr, Limit: max(limit, 0)})
		case "local":
			r, err = storm.RunLocal(ctx, storm.LocalOptions{Options: storm.Options{Bin: abs, Home: filepath.Join(*work, "local"), Jobs: *localJobs, Kills: *localKills,
				KillMin: 2 * time.Second, KillMax: 5 * time.Second, Doubles: 2, Seed: *seed, Timeout: 5 * time.Minute, Progress: stderr},
				Aimed: *localKills / 2, Preempts: 4, DiskFull: true, Outside: filepath.Join(*work, "tasks.log")})
		default:
			fmt.Fprintf(stderr, "chaos: -only %q: no such run (sim, local)\n", what)
			return 2
		}
		if err != nil {
			fmt.Fprintf(stderr, "chaos: %s: %v\n", what, err)
			failed = true
		}
		if r != nil {
			fmt.Fprintln(stdout, r.Line())
			for _, p := range r.Problems {
				fmt.Fprintln(stderr, "  "+p)
			}
			failed = failed || !r.OK()
		}
		if ctx.Err() != nil {
			break
		}
	}
	if failed {
		return 1
	}
	return 0
}
