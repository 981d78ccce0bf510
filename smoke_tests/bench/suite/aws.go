package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"sortie/controller/clouds/all"
	"sortie/controller/config"
	"sortie/provision"
	"sortie/provision/aws"
	"sortie/provision/cloudtest"
)

// AWSOptions is a measure of how many DescribeInstances the controller's
// status checks cost on EC2 for a number of jobs in one region.
type AWSOptions struct {
	Home string // a fresh directory: moto's log, the provider's SSH key
	// Jobs are the job counts measured, each with a running cluster.
	Jobs []int
	// Simulated is how long the polling runs on the provider's clock.
	Simulated time.Duration
	Progress  io.Writer
}

// AWSResult is, for each job count, the DescribeInstances calls moto saw
// per minute of polling.
type AWSResult map[int]float64

// RunAWS starts moto behind the tests' EC2 proxy, which counts the calls,
// runs one instance per job there with sortie's tags, and drives the EC2 provider (configured from
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
	motoURL, stop, err := cloudtest.RunMoto(ctx, filepath.Join(o.Home, "moto.log"))
	if err != nil {
		return nil, err
	}
	defer stop()
	proxy, stopProxy, err := cloudtest.ServeEC2Proxy(motoURL)
	if err != nil {
		return nil, err
	}
	defer stopProxy()
	yaml := fmt.Sprintf("aws:\n  endpoint: %s\n  regions: [us-east-1]\n", proxy.URL)
	if err := os.WriteFile(filepath.Join(o.Home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	cfg, err := config.Load(o.Home, os.Getenv)
	if err != nil {
		return nil, err
	}
	image, err := anImage(ctx, proxy.URL)
	if err != nil {
		return nil, err
	}
	out := AWSResult{}
	made := 0
	for _, jobs := range o.Jobs {
		for ; made < jobs; made++ {
			if err := runTagged(ctx, proxy.URL, image, int64(made+1)); err != nil {
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
		proxy.ResetCalls()
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
		calls := proxy.Calls("DescribeInstances", "")
		out[jobs] = float64(calls) / o.Simulated.Minutes()
		fmt.Fprintf(o.Progress, "aws: %d jobs, poll interval %s over %d shards: %d DescribeInstances in %s simulated\n",
			jobs, interval, shards, calls, o.Simulated)
	}
	return out, nil
}

var imageIDRE = regexp.MustCompile(`<imageId>(ami-[0-9a-f]+)</imageId>`)

// anImage is an image moto knows.
func anImage(ctx context.Context, endpoint string) (string, error) {
	body, err := cloudtest.Call(ctx, endpoint, "us-east-1", "DescribeImages", map[string]string{"Owner.1": "amazon"})
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
	_, err := cloudtest.Call(ctx, endpoint, "us-east-1", "RunInstances", params)
	return err
}
