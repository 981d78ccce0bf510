package local

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"sortie/provision"
)

// BenchmarkLaunchStatusTerminate is the provider's part of one local job:
// a one-node cluster launched, asked about three times, and torn down.
func BenchmarkLaunchStatusTerminate(b *testing.B) {
	p := New(Config{Home: b.TempDir()})
	ctx := context.Background()
	start := cpuTime(b)
	for i := range b.N {
		s := provision.ClusterSpec{Name: fmt.Sprintf("sortie-%d-0-1", i), Placement: pl("local", "local-a"), NumNodes: 1}
		if _, err := p.Launch(ctx, s); err != nil {
			b.Fatal(err)
		}
		for range 3 {
			if m, err := p.Status(ctx, []string{s.Name}); err != nil || m[s.Name] == nil {
				b.Fatal(m, err)
			}
		}
		if err := p.Terminate(ctx, s.Name); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time (user and system) this process has used, in
// nanoseconds: on a shared machine it moves less than the wall time.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
