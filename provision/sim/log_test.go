package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"sortie/provision"
)

// logged returns the one line of out whose msg is msg, checking that
// each of fields appears in it once.
func logged(t *testing.T, out *bytes.Buffer, msg string, fields ...string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", line, err)
		}
		if m["msg"] != msg {
			continue
		}
		for _, f := range fields {
			if n := strings.Count(line, `"`+f+`":`); n != 1 {
				t.Errorf("%s appears %d times in %s", f, n, line)
			}
		}
		return m
	}
	t.Fatalf("no %q line in:\n%s", msg, out.String())
	return nil
}

// A launch and a termination made for a step log through its logger: their
// lines carry the step's job, task and attempt, and the cloud once, whether
// the step's logger names the cloud already or not.
func TestLaunchLogsThroughTheStepsLogger(t *testing.T) {
	for _, stepCloud := range []string{"", CloudName} {
		var out bytes.Buffer
		base := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
		p, _ := newSim(t, Config{Log: base.With("cloud", CloudName)})
		step := base.With("job", 7, "task", 0, "attempt", 2)
		if stepCloud != "" {
			step = step.With("cloud", stepCloud)
		}
		ctx := provision.WithLogger(context.Background(), step, stepCloud)
		name := provision.ClusterName(7, 0, 2)
		if _, err := p.Launch(ctx, provision.ClusterSpec{Name: name, Placement: east, NumNodes: 2}); err != nil {
			t.Fatal(err)
		}
		if err := p.Terminate(ctx, name); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"job": float64(7), "task": float64(0), "attempt": float64(2), "cloud": CloudName, "cluster": name}
		for _, msg := range []string{"launched cluster", "terminated cluster"} {
			m := logged(t, &out, msg, "job", "task", "attempt", "cloud")
			for k, v := range want {
				if m[k] != v {
					t.Errorf("step cloud %q: %s: %s = %v, want %v (line %v)", stepCloud, msg, k, m[k], v, m)
				}
			}
		}
	}
}

// With no step, the provider's own logger names the cloud.
func TestLaunchWithNoStepLogsThroughTheProvidersLogger(t *testing.T) {
	var out bytes.Buffer
	p, _ := newSim(t, Config{Log: slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})).With("cloud", CloudName)})
	c := launch(t, p, 7, 1, 1)
	m := logged(t, &out, "launched cluster", "cloud")
	if m["cloud"] != CloudName || m["cluster"] != c.Name || m["job"] != nil {
		t.Errorf("line %v", m)
	}
}
