package smoke_tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"sortie/controller/clouds"
	"sortie/controller/clouds/all"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/provision"
	"sortie/provision/aws"
	"sortie/provision/cloudtest"
	"sortie/provision/node/notice/imdsmock"
	"sortie/provision/sshrun"
	"sortie/schema"
)

// awsEnv is a user whose AWS account is moto behind the fault-injecting
// proxy, and whose instances are all played by one private sshd.
type awsEnv struct {
	*env
	moto  *cloudtest.Moto
	proxy *cloudtest.EC2Proxy
	nodes string
}

// Its IAM is moto's too, through the proxy (AWS_ENDPOINT_URL_IAM), and its
// S3 (AWS_ENDPOINT_URL_S3), so that nothing reaches AWS.
func newAWSEnv(t *testing.T) *awsEnv {
	t.Helper()
	return newAWSEnvVia(t, func(s *cloudtest.SSHD) string { return s.ProxyCommand }, "")
}

// newAWSEnvVia is newAWSEnv whose instances are reached with the proxy
// command via gives for the sshd, and with more config.yaml.
func newAWSEnvVia(t *testing.T, via func(*cloudtest.SSHD) string, more string) *awsEnv {
	t.Helper()
	moto := cloudtest.StartMoto(t)
	proxy := cloudtest.StartEC2Proxy(t, moto.URL)
	sshd := cloudtest.StartSSHD(t)
	nodes := t.TempDir()
	t.Cleanup(func() { cloudtest.KillNodeProcessesUnder(nodes) })
	e := newEnv(t, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_CONFIG_FILE=/dev/null", "AWS_PROFILE=", "AWS_REGION=",
		"AWS_ENDPOINT_URL_IAM="+proxy.URL, "AWS_ENDPOINT_URL_S3="+moto.URL)
	_, line, err := sshrun.LoadOrCreateKey(filepath.Join(e.home, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	sshd.Authorize(t, line)
	e.config(fmt.Sprintf(`
aws:
  regions: [us-east-1]
  endpoint: %s
  ssh_user: %s
  node_dir: %s
  poll_interval: 100ms
  retry_max_attempts: 1
  launch_timeout: 60s
ssh:
  proxy_command: %q
`, proxy.URL, sshd.User, nodes, via(sshd)) + more)
	return &awsEnv{env: e, moto: moto, proxy: proxy, nodes: nodes}
}

func TestAWSSpotJobEndToEnd(t *testing.T) {
	e := newAWSEnv(t)
	spotScenario(t, e.env, spotCase{
		resources: "  cloud: aws\n  region: us-east-1\n  instance_type: t3.micro\n",
		full:      func(zone string) { e.proxy.SetCapacity(zone, false) },
		fullZone:  "us-east-1a",
		nodes:     e.nodes,
		// The spot interruption: EC2 terminates the instance.
		interrupt: func(first contract.AttemptView) {
			if err := e.proxy.SpotInterrupt(context.Background(), "us-east-1", first.InstanceIDs[0]); err != nil {
				t.Fatal(err)
			}
		},
		recovered: func(first, next contract.AttemptView) {
			if z := deref(next.Zone); z == deref(first.Zone) || z == "us-east-1a" {
				t.Errorf("recovered in %s; want another zone with capacity", z)
			}
		},
		live: func() []string { return cloudtest.LiveInstances(t, e.moto.URL, "us-east-1") },
	})
	jsonLog(t, filepath.Join(e.home, "controller.log"), "aws")
}

// jsonLog checks that every line of a controller's log is a JSON object
// (the providers' lines and their SDKs' too, none plain text), and that
// some line names cloud, as the provider's lines do.
func jsonLog(t *testing.T, path, cloud string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("%s line %d is not JSON (%v): %q", path, i+1, err, line)
			continue
		}
		named = named || rec["cloud"] == cloud
	}
	if !named {
		t.Errorf("no line of %s has cloud %q", path, cloud)
	}
}

// spotCase is one cloud's part of the spot scenario.
type spotCase struct {
	resources string       // lines of the task's resources (spot and recovery are added)
	full      func(string) // turns capacity off in a zone
	fullZone  string       // the zone that has no capacity
	firstZone string       // where the first attempt must run; "" for any other zone
	nodes     string       // where the nodes' directories are; "" when the nodes have none (pods)
	// newCluster says a restart runs on a new cluster (pods run their
	// task once), not on the healthy one the failed attempt used.
	newCluster bool
	interrupt  func(first contract.AttemptView)
	recovered  func(first, next contract.AttemptView)
	live       func() []string // the cloud's instances still running
}

// spotScenario runs a spot job whose first zone has no capacity: it fails
// over, runs over SSH, is interrupted and recovers elsewhere, exits 29 once
// and restarts on the same cluster, and ends SUCCEEDED with every attempt's
// exit codes and zones recorded and nothing left running.
func spotScenario(t *testing.T, e *env, c spotCase) {
	t.Helper()
	c.full(c.fullZone)
	marker := filepath.Join(e.dir, "started")
	f := e.write("task.yaml", `
name: spot-train
resources:
`+c.resources+`  use_spot: true
  job_recovery:
    strategy: EAGER_NEXT_REGION
    recover_on_exit_codes: [29]
run: |
  echo "attempt $SORTIE_ATTEMPT as rank $SORTIE_NODE_RANK"
  if [ "$SORTIE_ATTEMPT" = 1 ]; then touch `+marker+`; sleep 300; fi
  if [ "$SORTIE_ATTEMPT" = 2 ]; then exit 29; fi
  echo finished
`)
	id := e.launch(f)
	waitFile(t, marker)
	d := e.waitStatus(id, "RUNNING")
	// The CLI links no cloud SDK: it reads a running cloud node's log
	// through the controller program.
	if logs := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout; !strings.Contains(logs, "attempt 1 as rank 0") {
		t.Errorf("logs of the running attempt: %q", logs)
	}
	first := d.Attempts[0]
	if z := deref(first.Zone); z == c.fullZone || (c.firstZone != "" && z != c.firstZone) || len(first.InstanceIDs) != 1 {
		t.Fatalf("first attempt in %s with %v; %s has no capacity, want %q", z, first.InstanceIDs, c.fullZone, c.firstZone)
	}
	if len(d.LaunchTries) == 0 || d.LaunchTries[0].Zone != c.fullZone || d.LaunchTries[0].Class != "capacity" {
		t.Errorf("launch tries: %+v", d.LaunchTries)
	}
	// The cloud takes the node away, and its processes die with it.
	c.interrupt(first)
	if c.nodes != "" {
		cloudtest.KillNodeProcesses(filepath.Join(c.nodes, first.InstanceIDs[0]))
	}

	d = e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 3 {
		t.Fatalf("attempts: %+v", d.Attempts)
	}
	wantOutcomes := []string{"preempted", "user_failure", "succeeded"}
	for i, a := range d.Attempts {
		if deref(a.Outcome) != wantOutcomes[i] {
			t.Errorf("attempt %d outcome %s, want %s (%s)", a.Attempt, deref(a.Outcome), wantOutcomes[i], deref(a.Reason))
		}
		t.Logf("attempt %d: %s/%s %v outcome %s codes %v: %s", a.Attempt, deref(a.Region), deref(a.Zone), a.InstanceIDs,
			deref(a.Outcome), codes(d)[i], deref(a.Decision))
	}
	c.recovered(first, d.Attempts[1])
	if got := codes(d); got[1][0] != 29 || got[2][0] != 0 {
		t.Errorf("exit codes %v", got)
	}
	if d.RecoveryCount != 2 || d.RestartsOnErrors != 0 {
		t.Errorf("recovery_count %d restarts_on_errors %d, want 2 and 0", d.RecoveryCount, d.RestartsOnErrors)
	}
	if reused := d.Attempts[2].Cluster == d.Attempts[1].Cluster; reused == c.newCluster {
		t.Errorf("the restart after exit 29 ran on %s after %s; want a new cluster: %v", d.Attempts[2].Cluster, d.Attempts[1].Cluster, c.newCluster)
	}
	if logs := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout; !strings.Contains(logs, "finished") {
		t.Errorf("logs: %q", logs)
	}
	e.must("controller", "stop")
	if live := c.live(); len(live) != 0 {
		t.Errorf("instances left running: %v", live)
	}
	if ents, _ := os.ReadDir(c.nodes); c.nodes != "" && len(ents) == 0 {
		t.Errorf("no node directory was ever used under %s", c.nodes)
	}
}

func TestCheckSaysWhatAWSLacks(t *testing.T) {
	e := newAWSEnv(t)
	var checks []clouds.Check
	if err := json.Unmarshal([]byte(e.must("check", "-o", "json").stdout), &checks); err != nil {
		t.Fatal(err)
	}
	byCloud := map[string]clouds.Check{}
	for _, c := range checks {
		byCloud[c.Cloud] = c
	}
	if !byCloud["local"].OK || !byCloud["aws"].OK || !strings.Contains(strings.Join(byCloud["aws"].Details, " "), "us-east-1") {
		t.Errorf("with moto and test credentials: %+v", checks)
	}
	details := strings.Join(byCloud["aws"].Details, "\n")
	if !strings.Contains(details, "buckets: the credentials list S3 buckets") || !strings.Contains(details, "instance profile: sortie-node does not exist yet") {
		t.Errorf("aws details lack the buckets and the instance profile:\n%s", details)
	}
	// Without credentials: disabled, and says what to set.
	bare := newEnv(t, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_CONFIG_FILE=/dev/null", "AWS_PROFILE=")
	out := bare.must("check").stdout
	if !strings.Contains(out, "aws: disabled") || !strings.Contains(out, "AWS_ACCESS_KEY_ID") {
		t.Errorf("check without credentials:\n%s", out)
	}
}

func TestAWSControllerKilledReattachesAndSweepsOrphans(t *testing.T) {
	e := newAWSEnv(t)
	killedControllerScenario(t, e.env, "{cloud: aws, region: us-east-1, instance_type: t3.micro}",
		func() string { return launchOrphan(t, e) },
		func() []string { return cloudtest.LiveInstances(t, e.moto.URL, "us-east-1") })
}

// killedControllerScenario kills the controller with -9 while a job runs on
// a cloud, has a sortie-tagged cluster appear that no attempt owns (what a
// controller killed between ending an attempt and its teardown leaves), and
// checks that the next controller finishes the job on its one attempt and
// terminates the orphan, leaving nothing running.
func killedControllerScenario(t *testing.T, e *env, resources string, launchOrphan func() string, live func() []string) contract.JobDetail {
	t.Helper()
	gate := filepath.Join(e.dir, "gate")
	started := filepath.Join(e.dir, "started")
	f := e.write("task.yaml", "resources: "+resources+`
run: |
  touch `+started+`
  while [ ! -f `+gate+` ]; do sleep 0.05; done
  echo released
`)
	id := e.launch(f)
	waitFile(t, started)
	e.waitStatus(id, "RUNNING")
	pid := daemonPID(t, e)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	orphan := launchOrphan()
	e.write("gate", "")
	startController(t, e)
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 1 || len(d.Attempts[0].InstanceIDs) != 1 {
		t.Fatalf("want one attempt on one instance after the restart: %+v", d.Attempts)
	}
	e.must("controller", "stop")
	left := live()
	for _, id := range left {
		if id == orphan {
			t.Errorf("orphan %s still running after the controller restarted", orphan)
		}
	}
	if len(left) != 0 {
		t.Errorf("instances left running: %v", left)
	}
	return d
}

func daemonPID(t *testing.T, e *env) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.home, "controller.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// launchOrphan launches a sortie-tagged cluster with the provider itself,
// as a controller would have, and returns its instance id.
func launchOrphan(t *testing.T, e *awsEnv) string {
	t.Helper()
	cfg, err := config.Load(e.home, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ac := all.AWSConfig(cfg)
	ac.Credentials = credentials.NewStaticCredentialsProvider("testing", "testing", "")
	p, err := aws.New(context.Background(), ac)
	if err != nil {
		t.Fatal(err)
	}
	return launchOrphanOn(t, p, schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1c"},
		schema.Resources{Cloud: "aws", InstanceType: "t3.micro"})
}

// launchOrphanOn launches, with provider p itself, a one-node cluster tagged
// as sortie's job 999 would be, and returns its instance id.
func launchOrphanOn(t *testing.T, p provision.Provider, at schema.Placement, r schema.Resources) string {
	t.Helper()
	name := provision.ClusterName(999, 0, 1)
	cl, err := p.Launch(context.Background(), provision.ClusterSpec{
		Name: name, NumNodes: 1, Placement: at, Resources: r,
		Tags: map[string]string{provision.TagManaged: "true", provision.TagCluster: name, provision.TagJob: "999", provision.TagTask: "0", provision.TagAttempt: "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cl.Nodes[0].InstanceID
}

// TestAWSNoticeCheckpoint: the spot interruption notice comes from AWS's
// own metadata simulator (amazon-ec2-metadata-mock), which the node agents
// ask through aws.imds_endpoint.
func TestAWSNoticeCheckpoint(t *testing.T) {
	e := newAWSEnv(t)
	mockBin, err := imdsmock.Build(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port, err := imdsmock.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(e.home, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e.config(strings.Replace(string(cfg), "aws:\n", "aws:\n  imds_endpoint: http://127.0.0.1:"+port+"\n", 1))
	noticeScenario(t, e.env, noticeCase{
		resources: "  cloud: aws\n  region: us-east-1\n  instance_type: t3.micro\n",
		kind:      "spot-interruption", source: "aws-imds",
		give: func() func() {
			m, err := imdsmock.StartOn(context.Background(), mockBin, t.TempDir(), port, "spot", "--action", "terminate")
			if err != nil {
				t.Fatal(err)
			}
			return m.Stop
		},
	})
}
