package service

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/schema"
)

// override is one command-line flag that sets a task field.
type override struct {
	flag  string // as typed: --cpus
	field string // below resources., or a task field
	value string // "" removes the field
	// location overrides move a candidate that names a place of its own.
	location bool
	resource bool
}

// launchOverrides lists the request's resource flags in a fixed order.
// "none" (and "*" for a place) removes the field, as in SkyPilot.
func launchOverrides(req contract.LaunchRequest) ([]override, error) {
	if req.Infra != "" && (req.Cloud != "" || req.Region != "" || req.Zone != "") {
		return nil, &contract.UsageError{Err: errors.New("--infra names the cloud, region and zone at once; give it alone, without --cloud, --region or --zone")}
	}
	var out []override
	add := func(flag, field, v string, location bool) {
		if v == "" {
			return
		}
		if strings.EqualFold(v, "none") || location && v == "*" {
			v = ""
		}
		out = append(out, override{flag: flag, field: field, value: v, location: location, resource: true})
	}
	add("--infra", "infra", req.Infra, true)
	add("--cloud", "cloud", req.Cloud, true)
	add("--region", "region", req.Region, true)
	add("--zone", "zone", req.Zone, true)
	add("--instance-type", "instance_type", req.InstanceType, false)
	add("--cpus", "cpus", req.CPUs, false)
	add("--memory", "memory", req.Memory, false)
	add("--disk-size", "disk_size", req.DiskSize, false)
	add("--disk-tier", "disk_tier", req.DiskTier, false)
	add("--network-tier", "network_tier", req.NetworkTier, false)
	add("--image-id", "image_id", req.ImageID, false)
	if len(req.Ports) > 0 {
		v := "[" + strings.Join(req.Ports, ", ") + "]"
		if len(req.Ports) == 1 && strings.EqualFold(req.Ports[0], "none") {
			v = ""
		}
		out = append(out, override{flag: "--ports", field: "ports", value: v, resource: true})
	}
	if req.Workdir != "" {
		out = append(out, override{flag: "--workdir", field: "workdir", value: req.Workdir})
	}
	if req.UseSpot != nil {
		out = append(out, override{flag: "--use-spot", field: "use_spot", value: strconv.FormatBool(*req.UseSpot), resource: true})
	}
	if req.NumNodes != nil {
		out = append(out, override{flag: "--num-nodes", field: "num_nodes", value: strconv.Itoa(*req.NumNodes)})
	}
	// Last: setting accelerators replaces an accelerator set or list, and
	// the candidates it leaves alike become one, which would move the
	// indexes the other flags' candidate paths use.
	add("--gpus", "accelerators", req.GPUs, false)
	return out, nil
}

// setsField says whether a candidate (an any_of or ordered item) sets the
// field an override is about, and so must take the override too: a
// candidate's own value would otherwise win over the task's.
func setsField(r schema.Resources, o override) bool {
	if o.location {
		return r.Cloud != "" || r.Region != "" || r.Zone != "" || r.Infra != ""
	}
	switch o.field {
	case "cpus":
		return r.CPUs != ""
	case "memory":
		return r.Memory != ""
	case "accelerators":
		return false // ApplySet takes them from every candidate itself
	case "use_spot":
		return r.UseSpot
	case "instance_type":
		return r.InstanceType != ""
	case "disk_size":
		return r.DiskSize != 0
	case "disk_tier":
		return r.DiskTier != ""
	case "network_tier":
		return r.NetworkTier != ""
	case "image_id":
		return r.ImageID != ""
	case "ports":
		return len(r.Ports) > 0
	}
	return false
}

// applyLaunchOverrides applies the command line's resource flags to every
// task, and to each of its candidates that sets the same field, as
// SkyPilot overrides every resources of a task: `--gpus L4` replaces an
// accelerator set, `--region` moves every candidate there. They are
// validated like the task file; a bad one is a usage error naming the
// flag, and nothing is stored.
func applyLaunchOverrides(p *schema.Pipeline, req contract.LaunchRequest) (*schema.Pipeline, error) {
	p, err := applyResourceOverrides(p, req)
	if err != nil || req.Priority == nil {
		return p, err
	}
	// --priority replaces the file's on every task: a job has one.
	n := *req.Priority
	if n < schema.MinPriority || n > schema.MaxPriority {
		return nil, &contract.UsageError{Err: fmt.Errorf("--priority: %d is not a priority; use a whole number from %d (lowest) to %d (highest); the default is %d",
			n, schema.MinPriority, schema.MaxPriority, schema.DefaultPriority)}
	}
	for _, t := range p.Tasks {
		t.Priority = &n
	}
	return p, nil
}

// applyResourceOverrides is applyLaunchOverrides but for --priority.
func applyResourceOverrides(p *schema.Pipeline, req contract.LaunchRequest) (*schema.Pipeline, error) {
	ovs, err := launchOverrides(req)
	if err != nil || len(ovs) == 0 {
		return p, err
	}
	var sets []string
	flags := map[string]string{} // assignment path → flag
	for i, t := range p.Tasks {
		prefix := ""
		if len(p.Tasks) > 1 {
			prefix = fmt.Sprintf("tasks[%d].", i)
		}
		for _, o := range ovs {
			if !o.resource {
				sets = append(sets, prefix+o.field+"="+o.value)
				flags[prefix+o.field] = o.flag
				continue
			}
			paths := []string{prefix + "resources." + o.field}
			for name, items := range map[string][]schema.Resources{"any_of": t.Resources.AnyOf, "ordered": t.Resources.Ordered} {
				for j, item := range items {
					if setsField(item, o) {
						paths = append(paths, fmt.Sprintf("%sresources.%s[%d].%s", prefix, name, j, o.field))
					}
				}
			}
			for _, path := range paths {
				sets = append(sets, path+"="+o.value)
				flags[path] = o.flag
			}
		}
	}
	out, _, err := schema.ApplySet(p, sets, clouds.Schema())
	if err == nil {
		return out, nil
	}
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("command-line overrides: %w", err)
	}
	// Name the flag, once, rather than every task and candidate it set.
	var probs []schema.Problem
	seen := map[string]bool{}
	for _, pr := range ve.Problems {
		if flag := flagOf(pr.Path, flags); flag != "" {
			pr.Path = flag
		} else {
			pr.Message += " (after the command line's overrides)"
		}
		if k := pr.Error(); !seen[k] {
			seen[k] = true
			probs = append(probs, pr)
		}
	}
	return nil, &schema.ValidationError{Problems: probs}
}

// flagOf finds the flag that set path or the field that holds it; "" if
// none did.
func flagOf(path string, flags map[string]string) string {
	best, flag := "", ""
	for p, f := range flags {
		if (path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[")) && len(p) > len(best) {
			best, flag = p, f
		}
	}
	return flag
}
