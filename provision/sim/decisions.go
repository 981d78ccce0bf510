package sim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// taskKey names one attempt of one task of a job.
type taskKey struct {
	Job     int64 `json:"job"`
	Task    int   `json:"task"`
	Attempt int   `json:"attempt"`
}

// seenEnd is when the controller was first told that an attempt ended in a
// way that may lead to another (a non-zero exit, a preemption).
type seenEnd struct {
	attempt int
	at      time.Time
}

// seenEnd records that the controller was just told attempt k ended; p.mu
// is held.
func (p *Provider) seenEnd(k taskKey, now time.Time) {
	if p.decisions == nil || k.Job == 0 {
		return
	}
	p.seen[taskKey{Job: k.Job, Task: k.Task}] = seenEnd{attempt: k.Attempt, at: now}
}

// requested records that the controller asked for attempt k (a Launch for
// it, or a Start of it on a reused cluster) and returns the decision log
// line when an earlier attempt's end had been seen; p.mu is held.
func (p *Provider) requested(k taskKey) string {
	if p.decisions == nil || k.Job == 0 {
		return ""
	}
	tk := taskKey{Job: k.Job, Task: k.Task}
	s, ok := p.seen[tk]
	if !ok || s.attempt >= k.Attempt {
		return ""
	}
	delete(p.seen, tk)
	now := p.cfg.Now()
	return Decision{Job: k.Job, Task: k.Task, Ended: s.attempt, Next: k.Attempt, Seen: s.at, Requested: now}.String()
}

// Decision is one line of the decision log: the controller was told at
// Seen that attempt Ended of a job's task had ended, and asked for attempt
// Next at Requested.
type Decision struct {
	Job             int64
	Task            int
	Ended, Next     int
	Seen, Requested time.Time
}

// Latency is the time from seeing the end to asking for the next attempt.
func (d Decision) Latency() time.Duration { return d.Requested.Sub(d.Seen) }

// String is the decision's log line.
func (d Decision) String() string {
	return fmt.Sprintf("job=%d task=%d ended=%d next=%d seen=%s requested=%s latency_ms=%.3f",
		d.Job, d.Task, d.Ended, d.Next, d.Seen.UTC().Format(time.RFC3339Nano), d.Requested.UTC().Format(time.RFC3339Nano),
		float64(d.Latency())/float64(time.Millisecond))
}

// ReadDecisions reads a decision log.
func ReadDecisions(path string) ([]Decision, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read decision log: %w", err)
	}
	defer f.Close()
	var out []Decision
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		d, err := parseDecision(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

func parseDecision(line string) (Decision, error) {
	var d Decision
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "job":
			d.Job, err = strconv.ParseInt(v, 10, 64)
		case "task":
			d.Task, err = strconv.Atoi(v)
		case "ended":
			d.Ended, err = strconv.Atoi(v)
		case "next":
			d.Next, err = strconv.Atoi(v)
		case "seen":
			d.Seen, err = time.Parse(time.RFC3339Nano, v)
		case "requested":
			d.Requested, err = time.Parse(time.RFC3339Nano, v)
		}
		if err != nil {
			return d, fmt.Errorf("field %s: %w", k, err)
		}
	}
	if d.Job == 0 || d.Seen.IsZero() || d.Requested.IsZero() {
		return d, fmt.Errorf("%q is not a decision line (job=, seen=, requested=)", line)
	}
	return d, nil
}

// decisionLog appends lines to a file, one writer at a time.
type decisionLog struct {
	path string
	mu   sync.Mutex
}

// write appends line; "" writes nothing. A nil log writes nothing.
func (l *decisionLog) write(line string) {
	if l == nil || line == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return // a measurement aid: never fail the cloud over it
	}
	defer f.Close()
	f.WriteString(line + "\n")
}
