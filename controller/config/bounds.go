package config

import (
	"fmt"
	"time"

	"sortie/schema"
)

// A value of zero, or a key left out, means the default; any other value
// must be in its range. The ranges keep what makes sense for a controller:
// a poll interval of 1ns once burned a third of a core for one job. A
// back-off may be as short as 1ms (the benchmarks use it, so that what they
// measure is the controller's own latency).

// The range of controller.log_max_bytes_per_attempt.
const (
	minLogBytes = 1 << 20
	maxLogBytes = 1 << 40
)

type durationRange struct {
	key      string
	v        Duration
	min, max time.Duration
	def      string // the default, as the error says it
}

type numberRange struct {
	key      string
	v        float64
	min, max float64
	def      string
}

func (cfg *Config) ranges() ([]durationRange, []numberRange) {
	c, s := cfg.Controller, cfg.Sim
	ds := []durationRange{
		{"controller.poll_interval", c.PollInterval, 50 * time.Millisecond, time.Hour, "5s"},
		{"controller.restart_backoff_initial", c.RestartBackoffInitial, time.Millisecond, 24 * time.Hour, "the built-in back-off"},
		{"controller.restart_backoff_max", c.RestartBackoffMax, time.Millisecond, 24 * time.Hour, "the built-in back-off"},
		{"controller.launch_backoff_initial", c.LaunchBackoffInitial, time.Millisecond, 24 * time.Hour, "the built-in back-off"},
		{"controller.launch_backoff_max", c.LaunchBackoffMax, time.Millisecond, 24 * time.Hour, "the built-in back-off"},
		{"controller.sweep_interval", c.SweepInterval, time.Second, 24 * time.Hour, "10m"},
		{"controller.max_keep_on_failure", c.MaxKeepOnFailure, time.Second, 30 * 24 * time.Hour, "24h"},
		{"controller.log_retention", c.LogRetention, time.Hour, 3650 * 24 * time.Hour, "30d"},
		{"storage.sync_interval", cfg.Storage.SyncInterval, time.Second, 24 * time.Hour, "30s"},
		{"aws.launch_timeout", cfg.AWS.LaunchTimeout, time.Second, 24 * time.Hour, "the provider's"},
		{"aws.poll_interval", cfg.AWS.PollInterval, 5 * time.Millisecond, 10 * time.Minute, "the provider's"},
		{"gcp.launch_timeout", cfg.GCP.LaunchTimeout, time.Second, 24 * time.Hour, "the provider's"},
		{"gcp.poll_interval", cfg.GCP.PollInterval, 5 * time.Millisecond, 10 * time.Minute, "the provider's"},
		{"kubernetes.provision_timeout", cfg.Kubernetes.ProvisionTimeout, time.Second, 24 * time.Hour, "10s"},
		{"kubernetes.launch_timeout", cfg.Kubernetes.LaunchTimeout, time.Second, 24 * time.Hour, "10m"},
		{"quarantine.half_life", cfg.Quarantine.HalfLife, time.Minute, 7 * 24 * time.Hour, "30m"},
		{"preemptions.half_life", cfg.Preemptions.HalfLife, time.Minute, 7 * 24 * time.Hour, "1h"},
		{"prices.on_demand_refresh", cfg.Prices.OnDemandRefresh, time.Minute, 30 * 24 * time.Hour, "24h"},
		{"prices.spot_refresh", cfg.Prices.SpotRefresh, 10 * time.Second, 24 * time.Hour, "5m"},
		{"sim.boot_delay", s.BootDelay, 0, 24 * time.Hour, "0"},
		{"sim.run_time", s.RunTime, time.Millisecond, 24 * time.Hour, "10s"},
	}
	if s.SaveEvery != nil {
		// 0 means "save every change", so only the upper bound applies.
		ds = append(ds, durationRange{"sim.save_every", *s.SaveEvery, 0, time.Hour, "5s"})
	}
	ns := []numberRange{
		{"controller.max_parallel_launches", float64(c.MaxParallelLaunches), 1, 10000, "16"},
		{"controller.launch_rounds", float64(c.LaunchRounds), 1, 1000, "5"},
		{"controller.unreachable_checks", float64(c.UnreachableChecks), 1, 1000, "12"},
		{"aws.retry_max_attempts", float64(cfg.AWS.RetryMaxAttempts), 1, 20, "3"},
		{"quarantine.threshold", float64(cfg.Quarantine.Threshold), 2, 100, "3"},
		{"sim.preempt_rate", s.PreemptRate, 0, 1, "0"},
		{"sim.preempt_attempts", float64(s.PreemptAttempts), 0, 1000000, "0, every attempt"},
		{"sim.capacity_per_zone", float64(s.CapacityPerZone), 0, 1000000000, "0, unlimited"},
	}
	for i, r := range s.ExitCodes {
		ns = append(ns,
			numberRange{fmt.Sprintf("sim.exit_codes[%d].code", i), float64(r.Code), 0, 255, "0"},
			numberRange{fmt.Sprintf("sim.exit_codes[%d].share", i), r.Share, 0, 1, "0"},
			numberRange{fmt.Sprintf("sim.exit_codes[%d].attempt", i), float64(r.Attempt), 0, 1000000, "0, every attempt"})
	}
	return ds, ns
}

// outOfRange lists the values outside their range, each at its line in
// config.yaml, or under the environment variable that set it.
func (cfg *Config) outOfRange(lines map[string]int, fromEnv map[string]string) []schema.Problem {
	var out []schema.Problem
	where := func(key string) schema.Problem {
		if env, ok := fromEnv[key]; ok {
			return schema.Problem{Path: env}
		}
		return schema.Problem{Path: key, Line: lines[key]}
	}
	if b := cfg.Controller.LogMaxBytesPerAttempt; b != 0 && (b < minLogBytes || b > maxLogBytes) {
		p := where("controller.log_max_bytes_per_attempt")
		p.Message = fmt.Sprintf("%s is out of range; give a size from %s to %s, or leave it out for %s", b, ByteSize(minLogBytes), ByteSize(maxLogBytes), DefaultLogMaxBytes)
		out = append(out, p)
	}
	ds, ns := cfg.ranges()
	for _, r := range ds {
		if r.v == 0 || (r.v.D() >= r.min && r.v.D() <= r.max) {
			continue
		}
		p := where(r.key)
		p.Message = fmt.Sprintf("%s is out of range; give a duration from %s to %s, or leave it out for %s", r.v.D(), showDuration(r.min), showDuration(r.max), r.def)
		out = append(out, p)
	}
	for _, r := range ns {
		if r.v == 0 || (r.v >= r.min && r.v <= r.max) {
			continue
		}
		p := where(r.key)
		p.Message = fmt.Sprintf("%v is out of range; give a number from %v to %v, or leave it out for %s", r.v, r.min, r.max, r.def)
		out = append(out, p)
	}
	return out
}

// showDuration writes 1h rather than 1h0m0s.
func showDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
