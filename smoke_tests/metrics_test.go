package smoke_tests

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"sortie/controller/lifecycle"
)

// freePort is a port of 127.0.0.1 nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// scrape reads the controller's /metrics with Prometheus's text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// sample is the value of the series of family name with exactly these
// labels (name=value pairs); -1 when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// A launch failure, a success, a restart on a listed exit code and a
// preemption, then one scrape of /metrics: every family counts exactly
// what happened.
func TestMetricsCountAKnownSequenceOfJobs(t *testing.T) {
	e := newEnv(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", freePort(t))
	e.config(fmt.Sprintf("controller:\n  metrics_listen: 127.0.0.1:%s\n  launch_rounds: 1\n", url[len("http://127.0.0.1:"):len(url)-len("/metrics")]))

	// No capacity in local-b for a job that may only run there: one failed
	// try, and the job ends FAILED_NO_RESOURCE after its one round.
	e.must("local", "capacity", "local/local-b", "off")
	nowhere := e.launch(e.write("nowhere.yaml", "resources: {cloud: local, zone: local-b}\nrun: echo never\n"))
	e.waitStatus(nowhere, lifecycle.FailedNoResource)
	e.must("local", "capacity", "local/local-b", "on")

	ok := e.launch(e.write("ok.yaml", "resources: {zone: local-a}\nrun: echo fine\n"))
	flaky := e.launch(e.write("flaky.yaml", `
resources:
  zone: local-a
  job_recovery: {recover_on_exit_codes: [29]}
run: if [ "$SORTIE_ATTEMPT" -lt 2 ]; then exit 29; fi
`))
	marker := e.write("started", "")
	os.Remove(marker)
	spot := e.launch(e.write("spot.yaml", `
resources: {zone: local-a}
run: |
  if [ "$SORTIE_ATTEMPT" = 1 ]; then touch `+marker+`; sleep 300; fi
`))
	waitFile(t, marker)
	e.waitStatus(spot, lifecycle.Running)
	e.must("local", "preempt", strconv.FormatInt(spot, 10))
	for _, id := range []int64{ok, flaky, spot} {
		e.waitStatus(id, lifecycle.Succeeded)
	}

	// The jobs gauge is read from the store at the scrape; the counters
	// were counted before each job's end was recorded.
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; {
		fams = scrape(t, url)
		if sample(fams, "sortie_decision_latency_seconds") == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sortie_jobs", []string{"status", "SUCCEEDED"}, 3},
		{"sortie_jobs", []string{"status", "FAILED_NO_RESOURCE"}, 1},
		{"sortie_jobs", []string{"status", "RUNNING"}, 0},
		{"sortie_jobs", []string{"status", "FAILED"}, 0},
		{"sortie_attempts_ended_total", []string{"outcome", "succeeded"}, 3},
		{"sortie_attempts_ended_total", []string{"outcome", "user_failure"}, 1},
		{"sortie_attempts_ended_total", []string{"outcome", "preempted"}, 1},
		{"sortie_attempts_ended_total", []string{"outcome", "launch_failed"}, 1},
		{"sortie_decisions_total", []string{"rule", "JobSucceeded"}, 3},
		{"sortie_decisions_total", []string{"rule", "ExitCodeMatched"}, 1},
		{"sortie_decisions_total", []string{"rule", "Preempted"}, 1},
		{"sortie_decisions_total", []string{"rule", "LaunchFailed"}, 1},
		{"sortie_recoveries_total", []string{"cause", "exit_code"}, 1},
		{"sortie_recoveries_total", []string{"cause", "preemption"}, 1},
		// The restart and the recovery each asked for a next attempt.
		{"sortie_decision_latency_seconds", nil, 2},
		// One try for the job with no capacity, one for each other job, and
		// the preempted job's second cluster.
		{"sortie_launch_tries_total", []string{"cloud", "local", "region", "local"}, 5},
		{"sortie_launch_failures_total", []string{"class", "capacity", "cloud", "local", "region", "local"}, 1},
	} {
		if got := sample(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"sortie_reconcile_tick_duration_seconds", "sortie_store_transaction_duration_seconds"} {
		if got := sample(fams, name); got < 1 {
			t.Errorf("%s observed %v times, want at least once", name, got)
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "job" || l.GetName() == "cluster" {
					t.Errorf("%s has an unbounded label %s=%s", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}
