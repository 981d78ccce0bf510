package schema

import (
	"cmp"
	"maps"
	"slices"
)

// DefaultCloud is where a task runs when nothing in it names a place.
const DefaultCloud = "local"

// ApplyDefaults fills every task's defaults; see Task.ApplyDefaults.
func (p *Pipeline) ApplyDefaults(clouds Clouds) {
	for _, t := range p.Tasks {
		t.ApplyDefaults(clouds)
	}
}

// ApplyDefaults fills the fields a task file may leave out, in place, and is
// safe to call again:
//
//   - num_nodes 1;
//   - the cloud of a region or zone given without one, when its name has
//     the form of the places of one cloud in clouds (Cloud.Place: us-east-1 /
//     us-east-1a are AWS's, us-east1 / us-east1-b GCP's), as SkyPilot
//     finds the cloud that has the region; for the resources, or for a
//     candidate when the resources name no cloud;
//   - resources.cloud "local" when neither the resources nor any any_of /
//     ordered candidate names a cloud, region or zone (infra included);
//   - resources.job_recovery {strategy: EAGER_NEXT_REGION,
//     max_restarts_on_errors: 0}, and the strategy alone when only it is
//     missing.
//
// Validation is separate (Parse): defaults never hide a problem.
func (t *Task) ApplyDefaults(clouds Clouds) {
	t.NumNodes = cmp.Or(t.NumNodes, 1)
	r := &t.Resources
	namedCloud := r.Cloud != ""
	clouds.fillPlace(r)
	for _, items := range [][]Resources{r.AnyOf, r.Ordered} {
		for i := range items {
			if namedCloud {
				items[i].Region = clouds.regionOfZone(items[i])
			} else {
				clouds.fillPlace(&items[i])
			}
		}
	}
	if !t.Resources.namesPlace() {
		t.Resources.Cloud = DefaultCloud
	}
	rec := t.Recovery()
	t.Resources.JobRecovery = &rec
	t.Notify.applyDefaults()
}

// fillPlace gives r the cloud its region or zone names, and the region
// of its zone.
func (cs Clouds) fillPlace(r *Resources) {
	r.Cloud = cs.cloudOfPlace(*r)
	r.Region = cs.regionOfZone(*r)
}

// regionOfZone is r's region, or the region its zone is in by the zone's
// name (us-east-1a: us-east-1, us-central1-a: us-central1) when r names a
// zone and no region, as SkyPilot reads a zone alone: the zone of r's
// cloud, or of any cloud when r names none.
func (cs Clouds) regionOfZone(r Resources) string {
	if r.Region != "" || r.Zone == "" {
		return r.Region
	}
	for _, c := range cs {
		if c.Place == nil || (r.Cloud != "" && r.Cloud != c.Name) {
			continue
		}
		if region, ok := c.Place(r.Zone); ok && region != "" {
			return region
		}
	}
	return r.Region
}

// cloudOfPlace is r's cloud, or the one its region or zone belongs to by
// name when it names none; empty when neither tells.
func (cs Clouds) cloudOfPlace(r Resources) string {
	if r.Cloud != "" {
		return r.Cloud
	}
	for _, name := range []string{r.Zone, r.Region} {
		if name == "" {
			continue
		}
		for _, c := range cs {
			if c.Place == nil {
				continue
			}
			if _, ok := c.Place(name); ok {
				return c.Name
			}
		}
	}
	return ""
}

func (r Resources) namesPlace() bool {
	place := func(c Resources) bool { return c.Cloud != "" || c.Region != "" || c.Zone != "" }
	return place(r) || slices.ContainsFunc(r.AnyOf, place) || slices.ContainsFunc(r.Ordered, place)
}

// Recovery is the task's effective recovery policy, defaults included, whether
// or not ApplyDefaults ran. The result is a copy: changing it changes nothing
// in the task.
func (t *Task) Recovery() JobRecovery {
	var jr JobRecovery
	if t.Resources.JobRecovery != nil {
		jr = t.Resources.JobRecovery.clone()
	}
	jr.Strategy = cmp.Or(jr.Strategy, EagerNextRegion)
	return jr
}

// clone is a deep copy of jr.
func (jr JobRecovery) clone() JobRecovery {
	jr.RecoverOnExitCodes = slices.Clone(jr.RecoverOnExitCodes)
	jr.MaxRecoveries = clonePtr(jr.MaxRecoveries)
	jr.MaxRestartsWithoutProgress = clonePtr(jr.MaxRestartsWithoutProgress)
	jr.Escalate = jr.Escalate.clone()
	return jr
}

// Clone is a deep copy of the pipeline.
func (p *Pipeline) Clone() *Pipeline {
	c := &Pipeline{Name: p.Name, Tasks: make([]*Task, len(p.Tasks)), Warnings: slices.Clone(p.Warnings)}
	for i, t := range p.Tasks {
		c.Tasks[i] = t.Clone()
	}
	return c
}

// Clone is a deep copy of the task.
func (t *Task) Clone() *Task {
	c := *t
	c.Resources = t.Resources.clone()
	c.FileMounts = maps.Clone(t.FileMounts)
	c.Envs = maps.Clone(t.Envs)
	c.RequiredEnvs = slices.Clone(t.RequiredEnvs)
	c.Notify = t.Notify.clone()
	c.WorkdirRepo = clonePtr(t.WorkdirRepo)
	c.Priority = clonePtr(t.Priority)
	if t.StorageMounts != nil {
		c.StorageMounts = make(map[string]StorageMount, len(t.StorageMounts))
		for k, sm := range t.StorageMounts {
			sm.Persistent = clonePtr(sm.Persistent)
			sm.Sources = slices.Clone(sm.Sources)
			c.StorageMounts[k] = sm
		}
	}
	if t.Secrets != nil {
		c.Secrets = make(map[string]*string, len(t.Secrets))
		for k, v := range t.Secrets {
			c.Secrets[k] = clonePtr(v)
		}
	}
	return &c
}

// clonePtr is a copy of *p; nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (r Resources) clone() Resources {
	c := r
	c.Accelerators = maps.Clone(r.Accelerators)
	c.Ports = slices.Clone(r.Ports)
	c.Labels = maps.Clone(r.Labels)
	cloneList := func(l []Resources) []Resources {
		if l == nil {
			return nil
		}
		out := make([]Resources, len(l))
		for i, item := range l {
			out[i] = item.clone()
		}
		return out
	}
	c.AnyOf = cloneList(r.AnyOf)
	c.Ordered = cloneList(r.Ordered)
	if r.JobRecovery != nil {
		jr := r.JobRecovery.clone()
		c.JobRecovery = &jr
	}
	return c
}

// WithoutSecretValues is a deep copy with every secret's value removed and
// its name kept, fit to be stored or shown: at launch the value comes from
// the environment again.
func (p *Pipeline) WithoutSecretValues() *Pipeline {
	c := p.Clone()
	for _, t := range c.Tasks {
		for k := range t.Secrets {
			t.Secrets[k] = nil
		}
	}
	return c
}
