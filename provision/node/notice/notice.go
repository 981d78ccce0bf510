// Package notice hears a cloud's warning that a node is about to be taken
// away: the AWS instance metadata service (IMDSv2) and the GCE metadata server
// through a Metadata watcher (package metadata, which the agent's program
// links), or, on local nodes, a file the controller writes into the node's
// directory. It imports nothing else of sortie's and no HTTP client: the CLI
// and every package that only speaks of notices (the node's status, the store)
// link it without one.
package notice

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Kinds of notice.
const (
	// KindSpotInterruption is AWS's two-minute warning before a spot
	// instance is stopped, hibernated or terminated.
	KindSpotInterruption = "spot-interruption"
	// KindRebalance is AWS's rebalance recommendation: the instance is at
	// elevated risk of interruption. It ends nothing by itself.
	KindRebalance = "rebalance"
	// KindPreempted is GCE's preemption (about 30 s of warning) and the
	// local cloud's `sortie local preempt --notice`.
	KindPreempted = "preempted"
)

// Sources of notices.
const (
	SourceAWS   = "aws-imds"
	SourceGCE   = "gce-metadata"
	SourceLocal = "local"
)

// Default endpoints of the metadata services.
const (
	DefaultAWSEndpoint = "http://169.254.169.254"
	DefaultGCEEndpoint = "http://metadata.google.internal"
)

// GCEWarning is how long GCE gives a preempted instance before it stops it.
const GCEWarning = 30 * time.Second

// Notice is one warning heard from the node's cloud.
type Notice struct {
	Kind   string `json:"kind"`   // KindSpotInterruption, KindRebalance or KindPreempted
	Source string `json:"source"` // SourceAWS, SourceGCE or SourceLocal
	// At is when the node heard the notice (its own clock).
	At time.Time `json:"at"`
	// Deadline is when the cloud takes the node away; zero when the notice
	// names none (a rebalance recommendation).
	Deadline time.Time `json:"deadline,omitzero"`
}

// Ends says whether the notice means the node is going away, so the task
// should be stopped and replaced. A rebalance recommendation does not.
func (n Notice) Ends() bool {
	return n.Kind == KindSpotInterruption || n.Kind == KindPreempted
}

// Config says where to listen.
type Config struct {
	// Source is SourceAWS, SourceGCE or SourceLocal; empty watches nothing.
	Source string
	// Endpoint is the metadata service's base URL (scheme and host); empty
	// means the cloud's own (DefaultAWSEndpoint, DefaultGCEEndpoint).
	Endpoint string
	// NodeDir is the local node's directory, where the notice request file
	// (RequestFile) appears; SourceLocal only.
	NodeDir string
	// Interval is how often AWS's and the local source are polled, and how
	// long to wait after an error before asking again; 0 means
	// DefaultInterval.
	Interval time.Duration
	// Metadata asks the clouds' metadata services (SourceAWS, SourceGCE);
	// nil hears nothing from them, with an error logged.
	Metadata Metadata
	// Now and After are the clock; nil means the real one.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Log receives the errors that are retried; nil discards them.
	Log *slog.Logger
}

// Metadata watches a cloud's metadata service for notices, calling report
// for each; it returns when ctx is done or report says the node ends.
type Metadata interface {
	WatchAWS(ctx context.Context, c Config, report func(Notice) bool)
	WatchGCE(ctx context.Context, c Config, report func(Notice) bool)
}

// DefaultInterval polls often enough that a task hears its notice well
// within a second of the cloud giving it.
const DefaultInterval = 250 * time.Millisecond

// Validate names what is wrong with the configuration.
func (c Config) Validate() error {
	switch c.Source {
	case "", SourceAWS, SourceGCE:
	case SourceLocal:
		if c.NodeDir == "" {
			return fmt.Errorf("notice source %q: the node directory is empty; give the node's directory", c.Source)
		}
	default:
		return fmt.Errorf("notice source %q: unknown; use %q, %q or %q", c.Source, SourceAWS, SourceGCE, SourceLocal)
	}
	if c.Interval < 0 {
		return fmt.Errorf("notice interval %s: is negative; give a positive duration or 0 for %s", c.Interval, DefaultInterval)
	}
	return nil
}

// Watch listens to the configured source until ctx is done, calling found
// once for each kind of notice it hears. It returns early after a notice
// that ends the node (there is nothing more to hear) and at once when the
// source is empty or the configuration is invalid (the error is logged).
// Errors talking to the source are logged and retried: a metadata service
// that is briefly unreachable must not end the watch.
func Watch(ctx context.Context, cfg Config, found func(Notice)) {
	if err := cfg.Validate(); err != nil {
		cfg.logger().Error("notice watch not started", "err", err)
		return
	}
	w := cfg.WithDefaults()
	seen := map[string]bool{}
	report := func(n Notice) bool {
		if seen[n.Kind] {
			return false
		}
		seen[n.Kind] = true
		found(n)
		return n.Ends()
	}
	switch {
	case cfg.Source == SourceLocal:
		w.watchLocal(ctx, report)
	case cfg.Metadata == nil:
		w.Log.Error("notice watch not started: no metadata watcher for this source", "source", cfg.Source)
	case cfg.Source == SourceAWS:
		cfg.Metadata.WatchAWS(ctx, w, report)
	case cfg.Source == SourceGCE:
		cfg.Metadata.WatchGCE(ctx, w, report)
	}
}

func (c Config) logger() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

// WithDefaults fills in the interval, the clock and the logger.
func (c Config) WithDefaults() Config {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.After == nil {
		c.After = time.After
	}
	c.Log = c.logger()
	return c
}

// Wait waits d on the clock; false when ctx ended first.
func (c Config) Wait(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-c.After(d):
		return true
	}
}
