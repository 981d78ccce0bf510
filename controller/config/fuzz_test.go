package config

import (
	"os"
	"strings"
	"testing"

	sortiehome "sortie/controller/home"
)

// FuzzLoad checks, for any config.yaml: Load does not panic; an error
// names the file; a config it accepts has every interval and limit that
// the controller divides by or waits on filled with a positive value.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"",
		"controller:\n  poll_interval: 2s\n  max_parallel_launches: 4\n",
		"controller: {poll_interval: 1ns, restart_backoff_max: -5s, launch_rounds: 3}\n",
		"aws:\n  regions: [us-east-1]\n  poll_interval: 100ms\n  launch_timeout: 60s\nssh:\n  proxy_command: 'nc %h %p'\n",
		"controller:\n  poll_interval: 1e300\n",
		"controller:\n  poll_interval: NaN\n",
		"unknown: 1\n",
		"controller: [1, 2]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		home := t.TempDir()
		if err := os.WriteFile(sortiehome.Config(home), data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(home, func(string) string { return "" })
		if err != nil {
			if !strings.Contains(err.Error(), "config.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		c := cfg.Controller
		for name, d := range map[string]Duration{"poll_interval": c.PollInterval, "restart_backoff_initial": c.RestartBackoffInitial,
			"restart_backoff_max": c.RestartBackoffMax, "launch_backoff_initial": c.LaunchBackoffInitial, "launch_backoff_max": c.LaunchBackoffMax} {
			if d <= 0 {
				t.Errorf("controller.%s is %v after Load; want a positive interval", name, d.D())
			}
		}
		if c.MaxParallelLaunches <= 0 {
			t.Errorf("controller.max_parallel_launches is %d after Load", c.MaxParallelLaunches)
		}
	})
}
