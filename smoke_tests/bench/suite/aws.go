package suite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"sortie/controller/clouds/all"
	"sortie/controller/config"
	"sortie/provision"
	"sortie/provision/aws"
)

// AWSOptions is a measure of how many DescribeInstances the controller's
// status checks cost on EC2 for a number of jobs in one region.
type AWSOptions struct {
	Home string // a fresh directory: moto's log, the provider's SSH key
	// Jobs are the job counts measured, each with a running cluster.
	Jobs []int
	// PollInterval is the controller's; its default when zero.
	PollInterval time.Duration
	// Simulated is how long the polling runs on the provider's clock.
	Simulated time.Duration
	Progress  io.Writer
}

// AWSResult is, for each job count, the DescribeInstances calls moto saw
// per minute of polling.
type AWSResult map[int]float64

// RunAWS starts moto behind a counting proxy, runs one instance per job
// there with sortie's tags, and drives the EC2 provider (configured from
// config.yaml as the controller's is) with the controller's status pattern:
// a poll interval spread over shards (a tick every 250ms, at most 20), each
// tick asking Status about its shard's clusters (job id modulo the shard
// count), as Controller.snapshot does. The provider's clock is simulated,
// so a minute of polling takes as long as its calls.
func RunAWS(ctx context.Context, o AWSOptions) (AWSResult, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Simulated <= 0 {
		o.Simulated = time.Minute
	}
	stop, motoURL, err := startMoto(ctx, o.Home)
	if err != nil {
		return nil, err
	}
	defer stop()
	proxy := &countingProxy{}
	target, _ := url.Parse(motoURL)
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	srv := httptest.NewServer(proxy.handler(rp))
	defer srv.Close()
	yaml := fmt.Sprintf("aws:\n  endpoint: %s\n  regions: [us-east-1]\n", srv.URL)
	if o.PollInterval > 0 {
		yaml += fmt.Sprintf("controller:\n  poll_interval: %s\n", o.PollInterval)
	}
	if err := os.WriteFile(filepath.Join(o.Home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	cfg, err := config.Load(o.Home, os.Getenv)
	if err != nil {
		return nil, err
	}
	image, err := anImage(ctx, srv.URL)
	if err != nil {
		return nil, err
	}
	out := AWSResult{}
	made := 0
	for _, jobs := range o.Jobs {
		for ; made < jobs; made++ {
			if err := runTagged(ctx, srv.URL, image, int64(made+1)); err != nil {
				return nil, err
			}
		}
		var mu sync.Mutex
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		pc := all.AWSConfig(cfg)
		pc.Now = clock
		// moto takes any credentials; never the machine's real ones.
		pc.Credentials = credentials.NewStaticCredentialsProvider("testing", "testing", "")
		p, err := aws.New(ctx, pc)
		if err != nil {
			return nil, err
		}
		interval := cfg.Controller.PollInterval.D()
		shards := min(max(int(interval/(250*time.Millisecond)), 1), 20)
		step := interval / time.Duration(shards)
		proxy.reset()
		for k := 0; time.Duration(k)*step < o.Simulated; k++ {
			var names []string
			for id := 1; id <= jobs; id++ {
				if id%shards == k%shards {
					names = append(names, provision.ClusterName(int64(id), 0, 1))
				}
			}
			if len(names) > 0 {
				got, err := p.Status(ctx, names)
				if err != nil {
					return nil, err
				}
				if len(got) != len(names) {
					return nil, fmt.Errorf("status found %d of %d clusters", len(got), len(names))
				}
			}
			mu.Lock()
			now = now.Add(step)
			mu.Unlock()
		}
		calls := proxy.count("DescribeInstances")
		out[jobs] = float64(calls) / o.Simulated.Minutes()
		fmt.Fprintf(o.Progress, "aws: %d jobs, poll interval %s over %d shards: %d DescribeInstances in %s simulated\n",
			jobs, interval, shards, calls, o.Simulated)
	}
	return out, nil
}

// countingProxy counts the EC2 actions that pass through it.
type countingProxy struct {
	mu    sync.Mutex
	calls map[string]int
}

func (p *countingProxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		p.mu.Lock()
		if p.calls == nil {
			p.calls = map[string]int{}
		}
		p.calls[form.Get("Action")]++
		p.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (p *countingProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = map[string]int{}
}

func (p *countingProxy) count(action string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[action]
}

// startMoto runs moto_server on a free port of 127.0.0.1 until stop.
func startMoto(ctx context.Context, home string) (stop func(), endpoint string, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := []string{"-H", "127.0.0.1", "-p", fmt.Sprint(port)}
	var cmd *exec.Cmd
	if path, err := exec.LookPath("moto_server"); err == nil {
		cmd = exec.Command(path, args...)
	} else {
		cmd = exec.Command("python3", append([]string{"-m", "moto.server"}, args...)...)
	}
	logFile, err := os.Create(filepath.Join(home, "moto.log"))
	if err != nil {
		return nil, "", err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_CONFIG_FILE=/dev/null")
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, "", fmt.Errorf("start moto_server (pip install 'moto[server]'): %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logFile.Close(); close(exited) }()
	stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := ec2Call(ctx, endpoint, "DescribeRegions", nil); err == nil {
			return stop, endpoint, nil
		}
		select {
		case <-exited:
			return nil, "", fmt.Errorf("moto_server exited; see %s", filepath.Join(home, "moto.log"))
		case <-ctx.Done():
			stop()
			return nil, "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, "", fmt.Errorf("moto_server did not answer within 60s")
		}
	}
}

// ec2Call sends one EC2 query request to us-east-1 at endpoint.
func ec2Call(ctx context.Context, endpoint, action string, params map[string]string) ([]byte, error) {
	form := url.Values{"Action": {action}, "Version": {"2016-11-15"}}
	for k, v := range params {
		form.Set(k, v)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %s", action, resp.StatusCode, body)
	}
	return body, nil
}

var imageIDRE = regexp.MustCompile(`<imageId>(ami-[0-9a-f]+)</imageId>`)

// anImage is an image moto knows.
func anImage(ctx context.Context, endpoint string) (string, error) {
	body, err := ec2Call(ctx, endpoint, "DescribeImages", map[string]string{"Owner.1": "amazon"})
	if err != nil {
		return "", err
	}
	m := imageIDRE.FindSubmatch(body)
	if m == nil {
		return "", fmt.Errorf("moto lists no image")
	}
	return string(m[1]), nil
}

// runTagged runs one instance tagged as job's first attempt's cluster.
func runTagged(ctx context.Context, endpoint, image string, job int64) error {
	params := map[string]string{"ImageId": image, "InstanceType": "t3.micro", "MinCount": "1", "MaxCount": "1",
		"TagSpecification.1.ResourceType": "instance"}
	for i, kv := range [][2]string{{provision.TagManaged, "true"}, {provision.TagCluster, provision.ClusterName(job, 0, 1)},
		{provision.TagJob, fmt.Sprint(job)}, {provision.TagRank, "0"}} {
		params[fmt.Sprintf("TagSpecification.1.Tag.%d.Key", i+1)] = kv[0]
		params[fmt.Sprintf("TagSpecification.1.Tag.%d.Value", i+1)] = kv[1]
	}
	_, err := ec2Call(ctx, endpoint, "RunInstances", params)
	return err
}
