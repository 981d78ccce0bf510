package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sortie/controller/contract"
	"sortie/provision/cloudtest"
	"sortie/provision/sshrun"
)

// SSHOptions is a measure of what watching nodes over SSH costs: the
// handshakes the controller's status checks make, counted from outside,
// and how soon it acts on a task's exit.
type SSHOptions struct {
	Bin  string // the sortie binary, sortie-controller and sortie-agent beside it
	Home string // a fresh directory
	// Nodes is how many one-node AWS jobs run (each its own instance).
	Nodes int
	// Warmup is how long they run, all RUNNING, before the count starts;
	// Window how long the count lasts.
	Warmup, Window time.Duration
	// Timeout bounds each wait: the launches, the exits' decisions.
	Timeout  time.Duration
	Progress io.Writer
}

// SSHResult is what RunSSH measured.
type SSHResult struct {
	// Handshakes are the SSH connections made to the nodes within the
	// window; PerMin the same a minute.
	Handshakes int
	PerMin     float64
	// Total is every connection made to the nodes, the launches' too.
	Total int
	// Decisions are, for each job, the time from its task's exit (the
	// task's own clock, just before it exits) to the controller recording
	// the attempt's end with its exit code and decision.
	Decisions []time.Duration
	// Ends are how each first attempt ended ("user_failure" expected).
	Ends map[string]int
}

// RunSSH runs Nodes jobs on the EC2 provider against moto, whose
// instances are all played by the tests' own sshd reached through the
// proxy command, with a counting TCP proxy between the proxy command and
// the sshd: every connection through it is one SSH handshake. The
// controller runs as its own process with the default poll interval. After
// the warm-up, the connections made within the window are counted. Then
// each task exits 29 (recover_on_exit_codes) and the time until the
// controller recorded the end is taken.
func RunSSH(ctx context.Context, o SSHOptions) (*SSHResult, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if _, err := os.Stat(cloudtest.SSHDPath); err != nil {
		return nil, fmt.Errorf("the ssh group needs OpenSSH's server at %s (apt-get install -y openssh-server)", cloudtest.SSHDPath)
	}
	for _, d := range []string{"sshd", "nodes", "marks", "work"} {
		if err := os.MkdirAll(filepath.Join(o.Home, d), 0o755); err != nil {
			return nil, err
		}
	}
	motoURL, stopMoto, err := cloudtest.RunMoto(ctx, filepath.Join(o.Home, "moto.log"))
	if err != nil {
		return nil, err
	}
	defer stopMoto()
	ec2, stopEC2, err := cloudtest.ServeEC2Proxy(motoURL)
	if err != nil {
		return nil, err
	}
	defer stopEC2()
	sshd, stopSSHD, err := cloudtest.RunSSHD(filepath.Join(o.Home, "sshd"))
	if err != nil {
		return nil, err
	}
	defer stopSSHD()
	counter, err := cloudtest.ServeCountingProxy(sshd.Addr)
	if err != nil {
		return nil, err
	}
	defer counter.Close()
	nodes := filepath.Join(o.Home, "nodes")
	defer cloudtest.KillNodeProcessesUnder(nodes)
	_, line, err := sshrun.LoadOrCreateKey(filepath.Join(o.Home, "keys"))
	if err != nil {
		return nil, err
	}
	if err := sshd.AuthorizeLine(line); err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`aws:
  regions: [us-east-1]
  endpoint: %s
  ssh_user: %s
  node_dir: %s
  poll_interval: 100ms
  retry_max_attempts: 1
  launch_timeout: 60s
ssh:
  proxy_command: %q
`, ec2.URL, sshd.User, nodes, sshd.ProxyCommandVia(counter.Port()))
	if err := os.WriteFile(filepath.Join(o.Home, "config.yaml"), []byte(config), 0o600); err != nil {
		return nil, err
	}
	marks := filepath.Join(o.Home, "marks")
	task := fmt.Sprintf(`resources:
  cloud: aws
  region: us-east-1
  instance_type: t3.micro
  job_recovery:
    recover_on_exit_codes: [29]
run: |
  if [ "$SORTIE_ATTEMPT" = 1 ]; then
    date +%%s%%N > %[1]s/running-$SORTIE_JOB_ID
    while [ ! -e %[1]s/exit ]; do sleep 0.1; done
    date +%%s%%N > %[1]s/exited-$SORTIE_JOB_ID
    exit 29
  fi
`, marks)
	file := filepath.Join(o.Home, "work", "task.yaml")
	if err := os.WriteFile(file, []byte(task), 0o644); err != nil {
		return nil, err
	}
	env := append(Environ(o.Home), "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_CONFIG_FILE=/dev/null", "AWS_PROFILE=", "AWS_REGION=",
		"AWS_ENDPOINT_URL_IAM="+ec2.URL, "AWS_ENDPOINT_URL_S3="+motoURL)
	pidFile := filepath.Join(o.Home, "controller.pid")
	d, err := startControllerEnv(ctx, o.Bin, o.Home, env, "controller", "controller.log", "start", 15*time.Second, 10*time.Millisecond,
		func(pid int) bool {
			b, err := os.ReadFile(pidFile)
			return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(pid)
		}, "run")
	if err != nil {
		return nil, err
	}
	defer d.Kill()

	var ids []int64
	for i := 0; i < o.Nodes; i++ {
		_, out, err := runCLI(ctx, o.Bin, env, filepath.Join(o.Home, "work"), "jobs", "launch", "-d", "-n", fmt.Sprintf("ssh-%d", i), file)
		if err != nil {
			return nil, err
		}
		id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("jobs launch printed %q, want a job id", out)
		}
		ids = append(ids, id)
	}
	fmt.Fprintf(o.Progress, "ssh: %d jobs launched; waiting for them to run\n", len(ids))
	for _, id := range ids {
		if err := waitPath(ctx, filepath.Join(marks, fmt.Sprintf("running-%d", id)), o.Timeout); err != nil {
			return nil, fmt.Errorf("job %d never ran (see %s): %w", id, filepath.Join(o.Home, "controller.log"), err)
		}
	}
	for _, id := range ids {
		if err := until(ctx, 100*time.Millisecond, o.Timeout, func() (bool, error) {
			j, err := showJob(ctx, o.Bin, env, o.Home, id)
			return err == nil && j.Status == "RUNNING", err
		}, func() error { return fmt.Errorf("job %d not RUNNING within %s", id, o.Timeout) }); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(o.Progress, "ssh: %d jobs RUNNING; warm-up %s, then handshakes counted for %s\n", len(ids), o.Warmup, o.Window)
	if err := sleepCtx(ctx, o.Warmup); err != nil {
		return nil, err
	}
	before := counter.Accepted()
	if err := sleepCtx(ctx, o.Window); err != nil {
		return nil, err
	}
	r := &SSHResult{Handshakes: counter.Accepted() - before, Ends: map[string]int{}}
	r.PerMin = float64(r.Handshakes) / o.Window.Minutes()
	r.Total = counter.Accepted()
	fmt.Fprintf(o.Progress, "ssh: %d handshakes in %s for %d nodes (%d in all since the start)\n", r.Handshakes, o.Window, o.Nodes, counter.Accepted())

	if err := os.WriteFile(filepath.Join(marks, "exit"), nil, 0o644); err != nil {
		return nil, err
	}
	for _, id := range ids {
		var ended *contract.AttemptView
		if err := until(ctx, 100*time.Millisecond, o.Timeout, func() (bool, error) {
			j, err := showJob(ctx, o.Bin, env, o.Home, id)
			if err != nil || len(j.Attempts) == 0 || j.Attempts[0].EndedAt == nil {
				return false, err
			}
			ended = &j.Attempts[0]
			return true, nil
		}, func() error { return fmt.Errorf("job %d's first attempt not ended within %s", id, o.Timeout) }); err != nil {
			return nil, err
		}
		exited, err := readNanos(filepath.Join(marks, fmt.Sprintf("exited-%d", id)))
		if err != nil {
			return nil, err
		}
		out := "none"
		if ended.Outcome != nil {
			out = *ended.Outcome
		}
		r.Ends[out]++
		r.Decisions = append(r.Decisions, ended.EndedAt.Sub(exited))
	}
	runCLI(ctx, o.Bin, env, o.Home, "jobs", "cancel", "--all", "-y")
	if err := d.Stop(30 * time.Second); err != nil {
		fmt.Fprintf(o.Progress, "ssh: %v\n", err)
	}
	return r, nil
}

func showJob(ctx context.Context, bin string, env []string, dir string, id int64) (*contract.JobDetail, error) {
	_, out, err := runCLI(ctx, bin, env, dir, "jobs", "show", strconv.FormatInt(id, 10), "-o", "json")
	if err != nil {
		return nil, err
	}
	var j contract.JobDetail
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		return nil, fmt.Errorf("jobs show %d: %w", id, err)
	}
	return &j, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
