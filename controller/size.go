package controller

import (
	"maps"
	"slices"
	"strings"

	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// attemptResources are the resources attempt a asks for: the task's, at
// the size an escalation chose for it, if any, and on-demand once a
// decision switched the task (job_recovery.on_demand_after).
func attemptResources(task *schema.Task, a *store.Attempt) schema.Resources {
	r := task.Resources
	if a.Size != nil {
		r = strategy.Resize(r, *a.Size)
	}
	if a.OnDemand {
		r = onDemandResources(r)
	}
	return r
}

// onDemandResources is r asking for on-demand capacity everywhere: spot is
// off for the resources and every candidate of any_of and ordered.
func onDemandResources(r schema.Resources) schema.Resources {
	r.UseSpot = false
	for _, items := range []*[]schema.Resources{&r.AnyOf, &r.Ordered} {
		if *items == nil {
			continue
		}
		*items = slices.Clone(*items)
		for i := range *items {
			(*items)[i].UseSpot = false
		}
	}
	return r
}

// attemptSize is what a asked for in the dimensions the task's escalation
// grows: where the next escalation starts.
func attemptSize(task *schema.Task, a *store.Attempt) strategy.Size {
	if a.Size != nil {
		return *a.Size
	}
	return strategy.SizeOf(task.Resources, task.Recovery().Escalate)
}

// sizeEnv tells the task what its attempt asked for, so a script can see
// an escalation (and size its own work): SORTIE_CPUS, SORTIE_MEMORY_GB
// (without the "+" of "at least") and SORTIE_ACCELERATORS ("A100:1"), each
// set only when resources ask for it.
func sizeEnv(r schema.Resources) map[string]string {
	env := map[string]string{}
	if r.CPUs != "" {
		env["SORTIE_CPUS"] = strings.TrimSuffix(r.CPUs, "+")
	}
	if r.Memory != "" {
		env["SORTIE_MEMORY_GB"] = strings.TrimSuffix(r.Memory, "+")
	}
	if len(r.Accelerators) > 0 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(r.Accelerators)) {
			parts = append(parts, schema.Rung(name, r.Accelerators[name]))
		}
		env["SORTIE_ACCELERATORS"] = strings.Join(parts, ",")
	}
	return env
}
