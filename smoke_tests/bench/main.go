// Command bench runs sortie's benchmark suite against the real binary and
// prints one line per figure, "name value unit", on stdout and nothing else;
// progress goes to stderr. `make bench` runs it. See the README's
// Performance section for what each figure measures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"sortie/controller/store/pgtest"
	"sortie/smoke_tests/bench/suite"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	bin, work, only          string
	keep                     bool
	simJobs                  int
	replicasJobs             int
	replicasRunTime          time.Duration
	replicasStore            string
	takeoverJobs             int
	exitShare, preemptShare  float64
	runTime                  time.Duration
	localJobs, parallel      int
	queueJobs, queueRunning  int
	queueRuns, launchRuns    int
	admitWaiting, admitRuns  int
	dashRunning              int
	noticeJobs, noticeAgents int
	noticeRounds             int
	simTimeout, localTimeout time.Duration
	cancelJobs, churnJobs    int
	storageFiles             int
	storageFileMiB           int
	storageUnchanged         int
	sshNodes                 int
	sshWarmup, sshWindow     time.Duration
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "", "the sortie binary, with sortie-controller beside it (default: build both into the work directory)")
	fs.StringVar(&o.work, "work", "", "directory for the benchmarks' homes (default: a temporary one, removed at the end)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (controller logs, stores)")
	fs.StringVar(&o.only, "only", "sim,local,sandbox,queue,launch,api,dashboard,aws,ssh,cancel,notice,storage,replicas,cost,admit", "which groups to run, comma-separated")
	fs.IntVar(&o.replicasJobs, "replicas-jobs", 3000, "sim jobs run on 1 replica, then on 3 (replicas_3_vs_1_ratio)")
	fs.DurationVar(&o.replicasRunTime, "replicas-run-time", 30*time.Second, "run time of every sim task of the replicas group")
	fs.StringVar(&o.replicasStore, "replicas-store", "sqlite", "the replicas group's store: sqlite (the home's state.db) or postgres (a PostgreSQL server the bench starts, a database per run)")
	fs.IntVar(&o.takeoverJobs, "takeover-jobs", 300, "sim jobs running on 2 replicas when one is killed (takeover_s)")
	fs.IntVar(&o.simJobs, "sim-jobs", 10000, "jobs submitted at once on the sim provider")
	fs.DurationVar(&o.runTime, "run-time", 120*time.Second, "run time of every sim task")
	fs.Float64Var(&o.exitShare, "exit-share", 0.10, "share of sim jobs whose first attempt exits 29")
	fs.Float64Var(&o.preemptShare, "preempt-share", 0.05, "share of sim jobs whose first cluster is preempted")
	fs.DurationVar(&o.simTimeout, "sim-timeout", 12*time.Minute, "how long the sim jobs may take to end")
	fs.IntVar(&o.localJobs, "local-jobs", 500, "jobs on the local provider")
	fs.IntVar(&o.parallel, "parallel", 16, "local launches at a time, and the plain loop's width")
	fs.DurationVar(&o.localTimeout, "local-timeout", 5*time.Minute, "how long the local jobs may take to end")
	fs.IntVar(&o.queueJobs, "queue-jobs", 100000, "jobs in the store the queue views are timed on")
	fs.IntVar(&o.queueRunning, "queue-running", 10000, "how many of those are RUNNING")
	fs.IntVar(&o.queueRuns, "queue-runs", 5, "timed runs of each queue view")
	fs.IntVar(&o.launchRuns, "launch-runs", 21, "timed runs of jobs launch -d")
	fs.IntVar(&o.admitWaiting, "admit-waiting", 10000, "jobs waiting under the limits, across 100 users, in the admit group")
	fs.IntVar(&o.admitRuns, "admit-runs", 50, "timed admission passes")
	fs.IntVar(&o.dashRunning, "dashboard-running", 10000, "running jobs in the store the dashboard's queue page is timed on")
	fs.IntVar(&o.cancelJobs, "cancel-jobs", 2000, "running sim jobs cancelled by one jobs cancel")
	fs.IntVar(&o.churnJobs, "churn-jobs", 50, "sim jobs that keep restarting while the cancel runs")
	fs.IntVar(&o.noticeJobs, "notice-jobs", 20, "local jobs given a preemption notice")
	fs.IntVar(&o.noticeAgents, "notice-agents", 20, "node agents hearing each round's spot interruption from the metadata simulator")
	fs.IntVar(&o.noticeRounds, "notice-rounds", 3, "rounds of metadata simulator notices")
	fs.IntVar(&o.storageFiles, "storage-files", 64, "files of the checkpoint directory uploaded to the S3 emulator")
	fs.IntVar(&o.storageFileMiB, "storage-file-mib", 16, "MiB of each of those files")
	fs.IntVar(&o.storageUnchanged, "storage-unchanged", 10000, "unchanged files of the timed resync pass")
	fs.IntVar(&o.sshNodes, "ssh-nodes", 10, "one-node AWS jobs whose nodes (the tests' sshd) the controller watches over SSH")
	fs.DurationVar(&o.sshWarmup, "ssh-warmup", time.Minute, "how long those jobs run before their SSH handshakes are counted")
	fs.DurationVar(&o.sshWindow, "ssh-window", time.Minute, "how long the SSH handshakes are counted")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{o: o, out: stdout, log: stderr}
	if err := b.setup(ctx); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	defer b.cleanup()
	failed := false
	groups := map[string]func(context.Context) error{"sim": b.sim, "local": b.local, "sandbox": b.sandbox, "queue": b.queue, "launch": b.launch, "api": b.api, "dashboard": b.dashboard, "aws": b.aws, "ssh": b.ssh, "cancel": b.cancel, "notice": b.notice, "storage": b.storage, "replicas": b.replicas, "cost": b.cost, "admit": b.admit}
	for _, g := range strings.Split(o.only, ",") {
		g = strings.TrimSpace(g)
		f, ok := groups[g]
		if !ok {
			fmt.Fprintf(stderr, "bench: -only %q: no such group (sim, local, sandbox, queue, launch, api, dashboard, aws, ssh, cancel, notice, storage, replicas, cost, admit)\n", g)
			return 2
		}
		if err := f(ctx); err != nil {
			fmt.Fprintf(stderr, "bench: %s: %v\n", g, err)
			failed = true
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

type bench struct {
	o         options
	out, log  io.Writer
	tmp       bool
	floorTime time.Duration // see floor
}

func (b *bench) setup(ctx context.Context) error {
	if b.o.work == "" {
		dir, err := os.MkdirTemp("", "sortie-bench-")
		if err != nil {
			return err
		}
		b.o.work, b.tmp = dir, true
	}
	if err := os.MkdirAll(b.o.work, 0o755); err != nil {
		return err
	}
	if b.o.bin == "" {
		b.o.bin = filepath.Join(b.o.work, "sortie")
		fmt.Fprintf(b.log, "building %s\n", b.o.bin)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.o.work+"/", "sortie/cmd/sortie", "sortie/cmd/sortie-controller", "sortie/cmd/sortie-agent")
		cmd.Stdout, cmd.Stderr = b.log, b.log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	abs, err := filepath.Abs(b.o.bin)
	if err != nil {
		return err
	}
	b.o.bin = abs
	fmt.Fprintf(b.log, "work directory %s\n", b.o.work)
	return nil
}

func (b *bench) cleanup() {
	if b.tmp && !b.o.keep {
		os.RemoveAll(b.o.work)
	}
}

// figure prints one result line.
func (b *bench) figure(name string, value float64, decimals int, unit string) {
	fmt.Fprintf(b.out, "%s %.*f %s\n", name, decimals, value, unit)
}

// admit times admission with o.admitWaiting jobs waiting across 100 users
// behind a full limit: admit_p99_ms, choosing the next jobs and every
// waiting job's place (strategy.Admit over the store's facts), and
// admit_pass_p99_ms, the whole pass (the store's transaction: read,
// decide, write the places that moved).
func (b *bench) admit(ctx context.Context) error {
	r, err := suite.Admit(ctx, suite.AdmitOptions{Dir: b.home("admit"), Waiting: b.o.admitWaiting, Users: 100, Runs: b.o.admitRuns})
	if err != nil {
		return err
	}
	b.figure("admit_p50_ms", suite.Ms(suite.Percentile(r.Decide, 50)), 1, "ms")
	b.figure("admit_p99_ms", suite.Ms(suite.Percentile(r.Decide, 99)), 1, "ms")
	b.figure("admit_pass_p99_ms", suite.Ms(suite.Percentile(r.Pass, 99)), 1, "ms")
	return nil
}

// count names a job count the way the figures do: 10k, 500, 100k.
func count(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func (b *bench) home(name string) string { return filepath.Join(b.o.work, name) }

// sim runs simJobs on hollow nodes: once alone, for the controller's own
// figures, then as a pair (simPair): plain beside every failure verdict on
// (sim_decision_*_all_on), whose decision p99 is set against the plain
// one's of the pair (sim_decision_all_on_ratio).
func (b *bench) sim(ctx context.Context) error {
	r, err := b.simRun(ctx, "sim", false)
	if err != nil {
		return err
	}
	n := "sim_" + count(r.Jobs)
	b.figure(n+"_peak_rss_mib", float64(r.Usage.PeakRSSKiB)/1024, 1, "MiB")
	b.figure(n+"_cpu_s", r.Usage.CPU.Seconds(), 1, "s")
	b.figure(n+"_rss_per_job_kib", float64(r.Usage.PeakRSSKiB)/float64(r.Jobs), 1, "KiB")
	b.figure(n+"_all_running_s", r.AllRunning.Seconds(), 1, "s")
	b.figure("sim_decision_p50_ms", suite.Ms(suite.Percentile(r.Decisions, 50)), 1, "ms")
	b.figure("sim_decision_p99_ms", suite.Ms(suite.Percentile(r.Decisions, 99)), 1, "ms")
	plain, on, err := b.simPair(ctx, "sim-pair-plain", suite.SimOptions{}, "sim-all-on", suite.SimOptions{AllOn: true})
	if err != nil {
		return err
	}
	p99, p99On := suite.Percentile(plain.Decisions, 99), suite.Percentile(on.Decisions, 99)
	b.figure("sim_decision_p99_ms_pair_plain", suite.Ms(p99), 1, "ms")
	b.figure("sim_decision_p50_ms_all_on", suite.Ms(suite.Percentile(on.Decisions, 50)), 1, "ms")
	b.figure("sim_decision_p99_ms_all_on", suite.Ms(p99On), 1, "ms")
	if p99 > 0 {
		b.figure("sim_decision_all_on_ratio", float64(p99On)/float64(p99), 2, "x")
	}
	b.cpuRatio("sim_cpu_all_on_ratio", plain, on)
	return nil
}

// cpuRatio prints the controller CPU of a pair's second run over its
// first's: the work a setting adds, which the machine's load moves far
// less than it moves a latency.
func (b *bench) cpuRatio(name string, first, second *suite.SimResult) {
	if first.Usage.CPU > 0 {
		b.figure(name, second.Usage.CPU.Seconds()/first.Usage.CPU.Seconds(), 2, "x")
	}
}

// simPair runs two sim runs at once, each on a controller and home of its
// own: whatever else loads the machine meanwhile loads both alike, so the
// ratio of their figures holds where two runs one after the other, minutes
// apart, would not on a shared machine. Each has half the cores, so their
// figures are not the lone run's.
func (b *bench) simPair(ctx context.Context, nameA string, a suite.SimOptions, nameB string, bo suite.SimOptions) (*suite.SimResult, *suite.SimResult, error) {
	var ra, rb *suite.SimResult
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ra, errA = b.simRunWith(ctx, nameA, a) }()
	go func() { defer wg.Done(); rb, errB = b.simRunWith(ctx, nameB, bo) }()
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		return nil, nil, err
	}
	return ra, rb, nil
}

// simRun runs simJobs on hollow nodes in the home named name, with every
// failure verdict on when allOn, and checks that every job succeeded with
// the recoveries the seed implies.
func (b *bench) simRun(ctx context.Context, name string, allOn bool) (*suite.SimResult, error) {
	return b.simRunWith(ctx, name, suite.SimOptions{AllOn: allOn})
}

// simRunWith is simRun with o's AllOn and Prices.
func (b *bench) simRunWith(ctx context.Context, name string, o suite.SimOptions) (*suite.SimResult, error) {
	r, err := suite.RunSim(ctx, suite.SimOptions{Bin: b.o.bin, Home: b.home(name), Jobs: b.o.simJobs, RunTime: b.o.runTime,
		ExitShare: b.o.exitShare, PreemptShare: b.o.preemptShare, Seed: 1, AllOn: o.AllOn, Prices: o.Prices, Timeout: b.o.simTimeout, Progress: b.log})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(b.log, "%s: %v in %s; recoveries %d (want %d); %d decisions; submit took %s\n",
		name, r.Statuses, r.Wall.Round(time.Second), r.Recoveries, r.WantRecoveries, len(r.Decisions), r.Submit.Round(time.Millisecond))
	if r.Statuses["SUCCEEDED"] != r.Jobs || r.Recoveries != r.WantRecoveries {
		return nil, fmt.Errorf("%s: the run went wrong: %v, recoveries %d, want %d SUCCEEDED and %d recoveries", name, r.Statuses, r.Recoveries, r.Jobs, r.WantRecoveries)
	}
	return r, nil
}

// cancel measures one `jobs cancel -n 'sweep-*' -y` of cancelJobs running
// sim jobs until all are CANCELLED (target < 10 s), and the decision p99
// of jobs that keep restarting meanwhile against its p99 just before.
func (b *bench) cancel(ctx context.Context) error {
	r, err := suite.RunCancel(ctx, suite.CancelOptions{Bin: b.o.bin, Home: b.home("cancel"), Jobs: b.o.cancelJobs,
		Churn: b.o.churnJobs, ChurnRunTime: time.Second, Baseline: 15 * time.Second, Timeout: 5 * time.Minute, Progress: b.log})
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "cancel: %d jobs CANCELLED in %s; %d restarting jobs still going; %d decisions before, %d during\n",
		r.Cancelled, r.Cancel.Round(time.Millisecond), r.ChurnActive, len(r.BaselineDecisions), len(r.DuringDecisions))
	if r.ChurnActive != b.o.churnJobs {
		return fmt.Errorf("the run went wrong: %d of %d restarting jobs still going after the cancel", r.ChurnActive, b.o.churnJobs)
	}
	if len(r.BaselineDecisions) == 0 || len(r.DuringDecisions) == 0 {
		return fmt.Errorf("no decision to time: %d before the cancel, %d during it", len(r.BaselineDecisions), len(r.DuringDecisions))
	}
	b.figure(fmt.Sprintf("cancel_%d_s", r.Cancelled), r.Cancel.Seconds(), 2, "s")
	before, during := suite.Percentile(r.BaselineDecisions, 99), suite.Percentile(r.DuringDecisions, 99)
	b.figure("cancel_decision_p99_baseline_ms", suite.Ms(before), 1, "ms")
	b.figure("cancel_decision_p99_ms", suite.Ms(during), 1, "ms")
	b.figure("cancel_decision_p99_ratio", float64(during)/float64(before), 2, "x")
	return nil
}

// sandbox measures a task's start in the local sandbox (bubblewrap) next
// to the same start on the machine itself.
func (b *bench) sandbox(ctx context.Context) error {
	r, err := suite.RunSandbox(ctx, suite.SandboxOptions{Home: b.home("sandbox"), Starts: 50})
	if err != nil {
		return err
	}
	for _, p := range []float64{50, 99} {
		b.figure(fmt.Sprintf("local_sandbox_start_p%.0f_ms", p), suite.Ms(suite.Percentile(r.Sandboxed, p)), 1, "ms")
		b.figure(fmt.Sprintf("local_plain_start_p%.0f_ms", p), suite.Ms(suite.Percentile(r.Plain, p)), 1, "ms")
	}
	return nil
}

func (b *bench) local(ctx context.Context) error {
	r, err := suite.RunLocal(ctx, suite.LocalOptions{Bin: b.o.bin, Home: b.home("local"), Jobs: b.o.localJobs, Parallel: b.o.parallel,
		Timeout: b.o.localTimeout, Progress: b.log})
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "local: sortie %s, plain loop %s, %v\n", r.Sortie.Round(time.Millisecond), r.Plain.Round(time.Millisecond), r.Statuses)
	if r.Statuses["SUCCEEDED"] != b.o.localJobs {
		return fmt.Errorf("the run went wrong: %v", r.Statuses)
	}
	b.figure("local_"+count(b.o.localJobs)+"_ratio", r.Ratio(), 2, "x")
	b.figure("local_cpu_ms_per_job", suite.Ms(r.CPUPerJob()), 2, "ms")
	b.figure("agent_rss_kib", float64(r.AgentRSSKiB), 0, "KiB")
	b.figure("agent_rss_task_bash_kib", float64(r.TaskRSSKiB), 0, "KiB")
	b.figure("agent_rss_ratio", float64(r.AgentRSSKiB)/float64(r.TaskRSSKiB), 2, "x")
	return nil
}

func (b *bench) queue(ctx context.Context) error {
	o := suite.QueueOptions{Bin: b.o.bin, Home: b.home("queue"), Jobs: b.o.queueJobs, Running: b.o.queueRunning, Runs: b.o.queueRuns, Progress: b.log}
	t0 := time.Now()
	if err := suite.BuildQueueStore(ctx, o); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "queue: store of %d jobs built in %s\n", o.Jobs, time.Since(t0).Round(time.Millisecond))
	r, err := suite.RunQueue(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "queue: --status RUNNING printed %d jobs, runs %v; default view printed %d lines, runs %v\n",
		r.StatusJobs, r.StatusRuns, r.DefaultLines, r.DefaultRuns)
	if r.StatusJobs != o.Running {
		return fmt.Errorf("--status RUNNING printed %d jobs, want %d", r.StatusJobs, o.Running)
	}
	n := "queue_" + count(o.Jobs)
	floor, err := b.floor(ctx)
	if err != nil {
		return err
	}
	b.figure(n+"_ms", suite.Ms(r.Status), 0, "ms")
	b.figure(n+"_ratio", float64(r.Status)/float64(floor), 1, "x")
	b.figure("queue_default_"+count(o.Jobs)+"_ms", suite.Ms(r.Default), 0, "ms")
	b.figure("queue_default_"+count(o.Jobs)+"_ratio", float64(r.Default)/float64(floor), 1, "x")
	return nil
}

// cost measures what counting costs: the default queue view over a store
// of queueJobs jobs with the COST column against the same jobs with no
// cost known (cost_queue_*), and the sim's decision p99 with prices and a
// max_cost on against the plain run beside it (sim_decision_p99_ms_prices_*,
// simPair).
func (b *bench) cost(ctx context.Context) error {
	o := suite.QueueOptions{Bin: b.o.bin, Home: b.home("cost-queue"), Jobs: b.o.queueJobs, Running: b.o.queueRunning, Runs: b.o.queueRuns,
		Progress: b.log, Costs: true}
	if err := suite.BuildQueueStore(ctx, o); err != nil {
		return err
	}
	plain := o
	plain.Home, plain.Costs = b.home("cost-queue-plain"), false
	if err := suite.BuildQueueStore(ctx, plain); err != nil {
		return err
	}
	q, err := suite.RunCostQueue(ctx, o, o.Home, plain.Home)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "cost: queue with costs, runs %v; without, runs %v\n", q.WithRuns, q.WithoutRuns)
	n := "cost_queue_" + count(o.Jobs)
	b.figure(n+"_ms", suite.Ms(q.With), 0, "ms")
	b.figure(n+"_plain_ms", suite.Ms(q.Without), 0, "ms")
	b.figure(n+"_ratio", float64(q.With)/float64(q.Without), 2, "x")
	if q.WithoutCPU > 0 {
		b.figure(n+"_cpu_ratio", float64(q.WithCPU)/float64(q.WithoutCPU), 2, "x")
	}
	off, on, err := b.simPair(ctx, "cost-sim-off", suite.SimOptions{}, "cost-sim-on", suite.SimOptions{Prices: true})
	if err != nil {
		return err
	}
	p99Off, p99On := suite.Percentile(off.Decisions, 99), suite.Percentile(on.Decisions, 99)
	b.figure("sim_decision_p99_ms_prices_off", suite.Ms(p99Off), 1, "ms")
	b.figure("sim_decision_p99_ms_prices_on", suite.Ms(p99On), 1, "ms")
	if p99Off > 0 {
		b.figure("sim_decision_prices_ratio", float64(p99On)/float64(p99Off), 2, "x")
	}
	b.cpuRatio("sim_cpu_prices_ratio", off, on)
	return nil
}

// aws measures the DescribeInstances calls a minute of the controller's
// status checks costs for 1 and 100 jobs in one region (target: equal).
func (b *bench) aws(ctx context.Context) error {
	home := b.home("aws")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	r, err := suite.RunAWS(ctx, suite.AWSOptions{Home: home, Jobs: []int{1, 100}, Progress: b.log})
	if err != nil {
		return err
	}
	b.figure("aws_describe_per_min_1_job", r[1], 1, "calls")
	b.figure("aws_describe_per_min_100_jobs", r[100], 1, "calls")
	b.figure("aws_describe_100_to_1_ratio", r[100]/r[1], 2, "x")
	return nil
}

// ssh measures the SSH handshakes a minute the controller's status checks
// of sshNodes nodes cost after a warm-up (target < 1: one connection per
// node, kept open), counted from outside the controller, and the time from
// a task's exit to the controller recording its end on those nodes.
func (b *bench) ssh(ctx context.Context) error {
	home := b.home("ssh")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	r, err := suite.RunSSH(ctx, suite.SSHOptions{Bin: b.o.bin, Home: home, Nodes: b.o.sshNodes, Warmup: b.o.sshWarmup, Window: b.o.sshWindow,
		Timeout: 3 * time.Minute, Progress: b.log})
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "ssh: first attempts ended %v; exit to decision %v\n", r.Ends, r.Decisions)
	if r.Ends["user_failure"] != b.o.sshNodes {
		return fmt.Errorf("the run went wrong: first attempts ended %v, want %d user_failure (exit 29)", r.Ends, b.o.sshNodes)
	}
	b.figure(fmt.Sprintf("ssh_handshakes_per_min_%d_nodes", b.o.sshNodes), r.PerMin, 2, "handshakes")
	b.figure("exit_to_decision_ssh_p50_ms", suite.Ms(suite.Percentile(r.Decisions, 50)), 1, "ms")
	b.figure("exit_to_decision_ssh_p99_ms", suite.Ms(suite.Percentile(r.Decisions, 99)), 1, "ms")
	return nil
}

// notice measures how fast a preemption notice reaches the task (SIGTERM)
// on local and from AWS's metadata simulator, and how fast the controller
// asks for the replacement on local.
func (b *bench) notice(ctx context.Context) error {
	r, err := suite.RunNotice(ctx, suite.NoticeOptions{Bin: b.o.bin, Home: b.home("notice"), Jobs: b.o.noticeJobs,
		Agents: b.o.noticeAgents, Rounds: b.o.noticeRounds, Timeout: 2 * time.Minute, Progress: b.log})
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "notice: local jobs %v; %d local, %d metadata simulator samples\n", r.Statuses, len(r.LocalSigterm), len(r.IMDSSigterm))
	if r.Statuses["SUCCEEDED"] != b.o.noticeJobs {
		return fmt.Errorf("the run went wrong: %v", r.Statuses)
	}
	b.figure("notice_to_sigterm_local_p50_ms", suite.Ms(suite.Percentile(r.LocalSigterm, 50)), 1, "ms")
	b.figure("notice_to_sigterm_local_p99_ms", suite.Ms(suite.Percentile(r.LocalSigterm, 99)), 1, "ms")
	b.figure("notice_to_sigterm_imds_p50_ms", suite.Ms(suite.Percentile(r.IMDSSigterm, 50)), 1, "ms")
	b.figure("notice_to_sigterm_imds_p99_ms", suite.Ms(suite.Percentile(r.IMDSSigterm, 99)), 1, "ms")
	b.figure("notice_to_replacement_launch_p50_ms", suite.Ms(suite.Percentile(r.Replacement, 50)), 1, "ms")
	b.figure("notice_to_replacement_launch_p99_ms", suite.Ms(suite.Percentile(r.Replacement, 99)), 1, "ms")
	return nil
}

// storage uploads a checkpoint directory to moto's S3 with sortie's sync
// and with the SDK's transfer manager, in the same run, and times a
// MOUNT_CACHED pass over unchanged files.
func (b *bench) storage(ctx context.Context) error {
	o := suite.StorageOptions{Home: b.home("storage"), Files: b.o.storageFiles, FileBytes: int64(b.o.storageFileMiB) << 20,
		Unchanged: b.o.storageUnchanged, Progress: b.log}
	r, err := suite.RunStorage(ctx, o)
	if err != nil {
		return err
	}
	if r.SyncedFiles != o.Files || r.ResyncMoved != 0 {
		return fmt.Errorf("the run went wrong: %d of %d files synced, %d moved on the resync", r.SyncedFiles, o.Files, r.ResyncMoved)
	}
	fmt.Fprintf(b.log, "storage: sync %s, transfer manager %s, resync of %d files %s\n", r.Sync, r.TransferManager, o.Unchanged, r.Resync)
	b.figure("sync_1gib_s", r.Sync.Seconds(), 2, "s")
	b.figure("sync_1gib_tm_s", r.TransferManager.Seconds(), 2, "s")
	b.figure("sync_1gib_ratio", float64(r.Sync)/float64(r.TransferManager), 2, "x")
	b.figure("resync_unchanged_ms", suite.Ms(r.Resync), 1, "ms")
	return nil
}

func (b *bench) launch(ctx context.Context) error {
	r, err := suite.RunLaunchCLI(ctx, suite.LaunchOptions{Bin: b.o.bin, Home: b.home("launch"), Runs: b.o.launchRuns})
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "launch: runs %v\n", r.Runs)
	floor, err := b.floor(ctx)
	if err != nil {
		return err
	}
	b.figure("launch_cli_ms", suite.Ms(r.Median), 1, "ms")
	b.figure("launch_cli_ratio", float64(r.Median)/float64(floor), 1, "x")
	r, err = suite.RunCLIInit(ctx, b.o.bin, b.home("launch"), b.o.launchRuns)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "cli init: runs %v\n", r.Runs)
	b.figure("cli_init_ms", suite.Ms(r.Median), 1, "ms")
	b.figure("cli_init_ratio", float64(r.Median)/float64(floor), 2, "x")
	return nil
}

// api times `jobs launch -d` through a `sortie server`, beside the same
// launch on the local path in the same loop.
func (b *bench) api(ctx context.Context) error {
	r, err := suite.RunAPILaunch(ctx, suite.LaunchOptions{Bin: b.o.bin, Home: b.home("api"), Runs: b.o.launchRuns})
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "api launch: runs %v\nlocal launch beside it: runs %v\n", r.API.Runs, r.Local.Runs)
	b.figure("api_launch_ms", suite.Ms(r.API.Median), 1, "ms")
	b.figure("api_launch_local_ms", suite.Ms(r.Local.Median), 1, "ms")
	b.figure("api_launch_ratio", float64(r.API.Median)/float64(r.Local.Median), 2, "x")
	return nil
}

// dashboard times the dashboard's queue page over a store of
// -dashboard-running running jobs (and as many ended), as a ratio to the
// API's same page in the same loop.
func (b *bench) dashboard(ctx context.Context) error {
	o := suite.QueueOptions{Home: b.home("dashboard"), Jobs: 2 * b.o.dashRunning, Running: b.o.dashRunning, Runs: 21, Progress: b.log}
	if err := suite.BuildQueueStore(ctx, o); err != nil {
		return err
	}
	r, err := suite.RunDashboardQueue(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.log, "dashboard: the queue page showed %d jobs, runs %v; the API's page, runs %v\n", r.Rows, r.PageRuns, r.APIRuns)
	if r.Rows != 50 {
		return fmt.Errorf("the queue page showed %d jobs, want a page of 50", r.Rows)
	}
	n := "dashboard_queue_" + count(o.Running)
	b.figure(n+"_ms", suite.Ms(r.Page), 1, "ms")
	b.figure(n+"_api_ms", suite.Ms(r.API), 1, "ms")
	b.figure(n+"_ratio", float64(r.Page)/float64(r.API), 2, "x")
	return nil
}

// floor is the baseline the command figures are measured against in the
// same run: the median time of the bench's minimal Go program, from
// process start to exit, measured like sortie --help. It is measured once
// per run, the first time a group asks, and printed as go_exec_floor_ms.
func (b *bench) floor(ctx context.Context) (time.Duration, error) {
	if b.floorTime > 0 {
		return b.floorTime, nil
	}
	bin := filepath.Join(b.o.work, "minimal")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "sortie/smoke_tests/bench/minimal")
	cmd.Stdout, cmd.Stderr = b.log, b.log
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("go build minimal: %w", err)
	}
	r, err := suite.RunCLIInit(ctx, bin, b.o.work, b.o.launchRuns)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(b.log, "minimal Go program: runs %v\n", r.Runs)
	b.floorTime = r.Median
	b.figure("go_exec_floor_ms", suite.Ms(r.Median), 1, "ms")
	return r.Median, nil
}

// replicas measures what sharing the jobs costs: the time for
// replicasJobs sim jobs to end on 3 replicas of one store over the same on
// 1 (target <= 1.1), run one after the other on this machine; the time
// from a kill -9 of one of 2 replicas until the other holds, and so
// drives, every job the dead one held (target < 15 s with the default
// 10 s lease TTL); and, for the argument of the gain on more machines,
// the controller's CPU per job and the store's commits per second.
func (b *bench) replicas(ctx context.Context) error {
	storeFor := func(string) (string, error) { return "", nil }
	switch b.o.replicasStore {
	case "sqlite":
	case "postgres":
		pg, err := pgtest.Start()
		if err != nil {
			return fmt.Errorf("-replicas-store postgres: %w", err)
		}
		defer pg.Stop()
		storeFor = pg.Database
	default:
		return fmt.Errorf("-replicas-store %q: want sqlite or postgres", b.o.replicasStore)
	}
	walls := map[int]time.Duration{}
	var one *suite.ReplicasResult
	for _, n := range []int{1, 3} {
		url, err := storeFor(fmt.Sprintf("replicas_%d", n))
		if err != nil {
			return err
		}
		o := suite.ReplicasOptions{Bin: b.o.bin, Home: b.home(fmt.Sprintf("replicas-%d", n)), Jobs: b.o.replicasJobs, Replicas: n, Store: url,
			RunTime: b.o.replicasRunTime, ExitShare: 0.10, PreemptShare: 0.05, Seed: 1, Timeout: 15 * time.Minute, Progress: b.log}
		r, err := suite.RunReplicas(ctx, o)
		if err != nil {
			return err
		}
		if r.Statuses["SUCCEEDED"] != o.Jobs || len(r.Problems) > 0 {
			return fmt.Errorf("the run went wrong on %d replicas: statuses %v, problems %v", n, r.Statuses, r.Problems)
		}
		fmt.Fprintf(b.log, "replicas: %d jobs on %d replicas in %s, %d attempts, CPU %s\n", o.Jobs, n, r.Wall.Round(time.Millisecond), r.Attempts, r.CPU)
		walls[n] = r.Wall
		if n == 1 {
			one = r
		}
	}
	url, err := storeFor("takeover")
	if err != nil {
		return err
	}
	o := suite.ReplicasOptions{Bin: b.o.bin, Home: b.home("takeover"), Jobs: b.o.takeoverJobs, Replicas: 2, Kill: 1, KillAfter: 1, Store: url,
		RunTime: 60 * time.Second, Seed: 1, Timeout: 10 * time.Minute, Progress: b.log}
	r, err := suite.RunReplicas(ctx, o)
	if err != nil {
		return err
	}
	if r.Orphaned == 0 || r.Statuses["SUCCEEDED"] != o.Jobs || len(r.Problems) > 0 {
		return fmt.Errorf("the takeover run went wrong: %d jobs orphaned, statuses %v, problems %v", r.Orphaned, r.Statuses, r.Problems)
	}
	rate, err := suite.CommitRate(ctx, b.home("takeover"), 5000)
	if err != nil {
		return err
	}
	k := count(b.o.replicasJobs)
	b.figure("replicas_1_"+k+"_s", walls[1].Seconds(), 1, "s")
	b.figure("replicas_3_"+k+"_s", walls[3].Seconds(), 1, "s")
	b.figure("replicas_3_vs_1_ratio", float64(walls[3])/float64(walls[1]), 2, "x")
	b.figure("takeover_s", r.Takeover.Seconds(), 2, "s")
	b.figure("replica_cpu_ms_per_attempt", suite.Ms(one.CPU)/float64(one.Attempts), 2, "ms")
	b.figure("store_commits_per_s", rate, 0, "/s")
	return nil
}
