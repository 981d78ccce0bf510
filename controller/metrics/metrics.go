// Package metrics holds the controller's Prometheus metrics: one registry
// per controller, the families the controller, the store and the providers
// count into, and the handler that serves them as /metrics. It is apart
// from the controller so that any process that runs a controller (the
// controller program, a future API server) serves the same registry.
//
// Labels are bounded: statuses, outcomes, rules, clouds, regions, error
// classes and API call names; never a job id or a cluster name.
//
// It must not import sortie/controller, controller/store, controller/service,
// sortie/provision/... or a cloud SDK.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// JobCounter counts jobs by status at scrape time (one grouped query).
type JobCounter interface {
	CountJobsByStatus(ctx context.Context) (map[lifecycle.Status]int, error)
}

// Metrics are the controller's metric families and their registry.
type Metrics struct {
	// Registry holds every family below; Handler serves it.
	Registry *prometheus.Registry

	AttemptsEnded   *prometheus.CounterVec // outcome
	Decisions       *prometheus.CounterVec // rule
	Recoveries      *prometheus.CounterVec // cause
	DecisionLatency prometheus.Histogram
	LaunchTries     *prometheus.CounterVec // cloud, region
	LaunchFailures  *prometheus.CounterVec // cloud, region, class
	APICalls        *prometheus.CounterVec // cloud, call
	APIErrors       *prometheus.CounterVec // cloud, call
	CostDollars     *prometheus.CounterVec // owner, cloud
	TickDuration    prometheus.Histogram
	StoreTx         prometheus.Histogram
}

// latencyBuckets span a millisecond to a few minutes: store transactions
// and ticks sit at the low end, decisions (which include the configured
// back-off) anywhere.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// New returns the metrics of one controller; jobs, when not nil, is asked
// for the sortie_jobs gauge at each scrape.
func New(jobs JobCounter) *Metrics {
	reg := prometheus.NewRegistry()
	f := promauto.With(reg)
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string) prometheus.Histogram {
		return f.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets})
	}
	m := &Metrics{
		Registry: reg,
		AttemptsEnded: counter("sortie_attempts_ended_total",
			"Attempts ended, by outcome (succeeded, user_failure, setup_failure, preempted, node_lost, launch_failed, cancelled, controller_error, timed_out, over_budget, preempted_by_priority).", "outcome"),
		CostDollars: counter("sortie_cost_dollars_total",
			"What ended attempts cost, in dollars, by the job's owner and the attempt's cloud: every node's price times the time it was billed (no storage, egress or taxes).", "owner", "cloud"),
		Decisions: counter("sortie_decisions_total",
			"Decisions taken when an attempt or a job ended, by the rule that made them.", "rule"),
		Recoveries: counter("sortie_recoveries_total",
			"Recoveries (restarts that count in recovery_count), by cause: preemption, node_lost or exit_code.", "cause"),
		DecisionLatency: histogram("sortie_decision_latency_seconds",
			"From the controller seeing an attempt end to its asking for the next attempt (a launch, or a start on the kept cluster), the restart back-off included."),
		LaunchTries: counter("sortie_launch_tries_total",
			"Cluster launches tried, by cloud and region.", "cloud", "region"),
		LaunchFailures: counter("sortie_launch_failures_total",
			"Cluster launches that failed, by cloud, region and error class (capacity, prechecks, transient).", "cloud", "region", "class"),
		APICalls: counter("sortie_provider_api_calls_total",
			"Calls to a cloud's API (EC2, Compute Engine), by cloud and call.", "cloud", "call"),
		APIErrors: counter("sortie_provider_api_errors_total",
			"Calls to a cloud's API that returned an error, by cloud and call.", "cloud", "call"),
		TickDuration: histogram("sortie_reconcile_tick_duration_seconds",
			"How long a reconcile tick took to read its jobs, ask the clouds for their clusters and hand out the jobs' steps."),
		StoreTx: histogram("sortie_store_transaction_duration_seconds",
			"How long a write transaction of the controller's store took, waiting for the write lock included."),
	}
	if jobs != nil {
		m.Registry.MustRegister(&jobsCollector{jobs: jobs})
	}
	return m
}

// Handler serves the registry in Prometheus's exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// APICall counts one call to a cloud's API and, when err is not nil, its
// error.
func (m *Metrics) APICall(cloud, call string, err error) {
	m.APICalls.WithLabelValues(cloud, call).Inc()
	if err != nil {
		m.APIErrors.WithLabelValues(cloud, call).Inc()
	}
}

// Since observes the time from start to now in h.
func Since(h prometheus.Observer, start time.Time) { h.Observe(time.Since(start).Seconds()) }

var jobsDesc = prometheus.NewDesc("sortie_jobs", "Jobs in the store, by status (read from the store at each scrape).", []string{"status"}, nil)

// jobsCollector reads the jobs gauge from the store at scrape time: every
// status is reported, zero included, so that a status that empties shows 0
// rather than vanishing.
type jobsCollector struct{ jobs JobCounter }

func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.jobs.CountJobsByStatus(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
		return
	}
	for _, s := range lifecycle.Statuses() {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}

// QuarantineReader says which placements are quarantined now.
type QuarantineReader func(ctx context.Context) ([]strategy.Quarantined, error)

var quarantineDesc = prometheus.NewDesc("sortie_quarantined_placements",
	"Placements quarantined now (1 each: a zone, an instance type in a zone, or a Kubernetes node): different jobs lost their node or failed setup alike there, so launches try them last (read from the store at each scrape).",
	[]string{"cloud", "region", "zone", "level", "instance_type", "node"}, nil)

// WatchQuarantine adds the sortie_quarantined_placements gauge, read with
// read at each scrape.
func (m *Metrics) WatchQuarantine(read QuarantineReader) {
	m.Registry.MustRegister(&quarantineCollector{read: read})
}

type quarantineCollector struct{ read QuarantineReader }

func (c *quarantineCollector) Describe(ch chan<- *prometheus.Desc) { ch <- quarantineDesc }

func (c *quarantineCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qs, err := c.read(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(quarantineDesc, err)
		return
	}
	for _, q := range qs {
		k := q.Key()
		ch <- prometheus.MustNewConstMetric(quarantineDesc, prometheus.GaugeValue, 1,
			k.Placement.Cloud, k.Placement.Region, k.Placement.Zone, k.Level(), k.InstanceType, k.Host)
	}
}
