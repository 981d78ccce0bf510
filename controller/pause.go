package controller

import (
	"fmt"
	"strings"
	"time"
)

// Pause points are moments a crash test aims a kill at: a controller killed
// there must leave nothing the next one cannot finish. They are off unless
// SORTIE_PAUSE_AT names them; a Controller whose Pause is nil pays one nil
// check per point.
const (
	PauseEnding   = "ending"   // an attempt's end is known, not yet recorded
	PauseEnded    = "ended"    // recorded; its nodes not yet stopped
	PauseStarting = "starting" // a node's task about to be started
	PauseStarted  = "started"  // every node started; the attempt not yet marked running
)

var pausePoints = []string{PauseEnding, PauseEnded, PauseStarting, PauseStarted}

// PauseFromEnv reads SORTIE_PAUSE_AT (a comma-separated list of pause
// points, or "all") and SORTIE_PAUSE_FOR (how long each stop lasts,
// default 1s). It returns nil when SORTIE_PAUSE_AT is unset or empty. At
// each named point the returned function logs "pause point" with the point,
// job and attempt, so a test watching the log can kill the process there,
// and then sleeps.
func PauseFromEnv(getenv func(string) string, logf func(point string, job int64, attempt int)) (func(point string, job int64, attempt int), error) {
	at := strings.TrimSpace(getenv("SORTIE_PAUSE_AT"))
	if at == "" {
		return nil, nil
	}
	d := time.Second
	if s := getenv("SORTIE_PAUSE_FOR"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("SORTIE_PAUSE_FOR=%q: not a duration of zero or more (e.g. 500ms)", s)
		}
		d = v
	}
	on := map[string]bool{}
	for _, p := range strings.Split(at, ",") {
		p = strings.TrimSpace(p)
		if p == "all" {
			for _, q := range pausePoints {
				on[q] = true
			}
			continue
		}
		known := false
		for _, q := range pausePoints {
			known = known || p == q
		}
		if !known {
			return nil, fmt.Errorf("SORTIE_PAUSE_AT=%q: unknown pause point %q; known: all, %s", at, p, strings.Join(pausePoints, ", "))
		}
		on[p] = true
	}
	return func(point string, job int64, attempt int) {
		if !on[point] {
			return
		}
		logf(point, job, attempt)
		time.Sleep(d)
	}, nil
}

// pause stops at point when pause points are on.
func (c *Controller) pause(point string, job int64, attempt int) {
	if c.Pause != nil {
		c.Pause(point, job, attempt)
	}
}
