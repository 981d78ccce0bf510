package strategy

import (
	"math"
	"strconv"
	"strings"

	"sortie/schema"
)

// AskOf is what a job of pipeline p holds while it runs, as admission
// counts it: one running job, and the most nodes, vCPUs and GPUs of each
// type any of its tasks asks for (its tasks run one at a time). A task's
// vCPUs are its cpus, "4+" counting 4, and nothing when it names an
// instance type alone; its GPUs are its accelerators times its nodes. A
// task that may run on one of several accelerators (a set, a list, or
// candidates naming different ones) counts the most of each type, so it
// waits for each limit it may run under.
func AskOf(p *schema.Pipeline) Amounts {
	out := Amounts{Jobs: 1}
	for _, t := range p.Tasks {
		nodes := max(t.NumNodes, 1)
		r := t.Resources
		cands := append(append([]schema.Resources{}, r.AnyOf...), r.Ordered...)
		cpus := vcpus(r.CPUs)
		gpus := map[string]int{}
		for name, n := range r.Accelerators {
			gpus[name] = max(gpus[name], n)
		}
		for _, c := range cands {
			if r.CPUs == "" {
				cpus = max(cpus, vcpus(c.CPUs))
			}
			if len(r.Accelerators) == 0 {
				for name, n := range c.Accelerators {
					gpus[name] = max(gpus[name], n)
				}
			}
		}
		out[Nodes] = max(out[Nodes], nodes)
		if cpus > 0 {
			out[VCPUs] = max(out[VCPUs], cpus*nodes)
		}
		for name, n := range gpus {
			if n > 0 {
				out[GPU(name)] = max(out[GPU(name)], n*nodes)
			}
		}
	}
	return out
}

// vcpus reads a task's cpus ("4", "4+", "0.5") as whole vCPUs, rounded
// up; 0 when not given or not a number.
func vcpus(s string) int {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "+"), 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return int(math.Ceil(f))
}
