package controller

import (
	"strings"
	"testing"
)

func TestPauseFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var hits []string
	logf := func(point string, job int64, attempt int) { hits = append(hits, point) }

	if p, err := PauseFromEnv(env(nil), logf); p != nil || err != nil {
		t.Fatalf("unset: %v, %v; want off", p != nil, err)
	}
	p, err := PauseFromEnv(env(map[string]string{"SORTIE_PAUSE_AT": "ended, starting", "SORTIE_PAUSE_FOR": "0s"}), logf)
	if err != nil || p == nil {
		t.Fatalf("on: %v", err)
	}
	c := &Controller{Pause: p}
	for _, pt := range pausePoints {
		c.pause(pt, 7, 2)
	}
	if strings.Join(hits, ",") != "ended,starting" {
		t.Errorf("stopped at %v, want ended and starting only", hits)
	}
	hits = nil
	p, _ = PauseFromEnv(env(map[string]string{"SORTIE_PAUSE_AT": "all", "SORTIE_PAUSE_FOR": "0"}), logf)
	for _, pt := range pausePoints {
		p(pt, 1, 1)
	}
	if len(hits) != len(pausePoints) {
		t.Errorf("all: stopped at %v", hits)
	}
	(&Controller{}).pause(PauseEnded, 1, 1) // off: nothing to call

	for _, bad := range []map[string]string{
		{"SORTIE_PAUSE_AT": "end"},
		{"SORTIE_PAUSE_AT": "ended", "SORTIE_PAUSE_FOR": "soon"},
		{"SORTIE_PAUSE_AT": "ended", "SORTIE_PAUSE_FOR": "-1s"},
	} {
		if _, err := PauseFromEnv(env(bad), logf); err == nil || !strings.Contains(err.Error(), "SORTIE_PAUSE_") {
			t.Errorf("%v: error %v, want one naming the variable", bad, err)
		}
	}
}
