package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
)

func resourceFields(candidate bool) []string {
	f := []string{"cloud", "infra", "region", "zone", "instance_type", "cpus", "memory",
		"accelerators", "gpus", "use_spot", "disk_size", "disk_tier", "network_tier", "image_id", "ports", "labels", "max_hourly_cost"}
	if !candidate {
		f = append(f, "any_of", "ordered", "placement", "job_recovery")
	}
	return f
}

// ignoredResourceFields are SkyPilot resources fields that mean nothing to
// a managed job sortie runs, or that SkyPilot fills in for itself.
func ignoredResourceFields() map[string]string {
	internal := "ignored: SkyPilot sets it for itself"
	return map[string]string{
		"autostop":                   "ignored: a managed job's cluster is torn down when the job ends",
		"priority":                   "ignored in a candidate: a job has one priority; give it at the top of the task or under resources",
		"priority_class":             "ignored: a Kubernetes PriorityClass; sortie orders waiting jobs by priority (0-1000)",
		"local_disk":                 "ignored: sortie does not choose instances by their local disks; pin instance_type instead",
		"ephemeral_storage":          "ignored: SkyPilot's older setting for a Kubernetes pod's scratch disk; use disk_size for the node's disk",
		"_cluster_config_overrides":  internal,
		"_no_missing_accel_warnings": internal,
		"_docker_login_config":       internal,
		"_is_image_managed":          internal,
		"_requires_fuse":             internal,
	}
}

func resourceNotes(candidate bool) map[string]string {
	notes := map[string]string{
		"accelerator_args": "accelerator_args (TPU settings) are not supported: sortie does not launch TPUs",
		"volumes":          "SkyPilot volumes are not supported; copy the data with file_mounts instead",
		"hooks":            "lifecycle hooks are not supported (SkyPilot takes them under config.hooks, not resources)",
		"candidates":       "candidates was the field of SkyPilot's removed sky bench; list the same resources under resources.any_of",
		"preemption":       "SkyPilot's preemption hook is not supported: sortie recovers a preempted job itself (see job_recovery)",
	}
	if candidate {
		notes["any_of"] = "candidates cannot nest; list every candidate directly under resources.any_of or resources.ordered"
		notes["ordered"] = notes["any_of"]
		notes["job_recovery"] = "job_recovery applies to the whole task; move it to resources.job_recovery"
		notes["placement"] = "placement orders every candidate of the task; move it to resources.placement"
	}
	return notes
}

func (d *decoder) resources(path string, v any, candidate bool) Resources {
	var r Resources
	if raw, ok := v.(map[string]any); ok && !candidate {
		v = d.oldRecoveryName(path, raw)
	}
	m, ok := d.mappingWith(path, v, resourceFields(candidate),
		fieldRules{ignored: ignoredResourceFields(), refused: resourceNotes(candidate)})
	if !ok {
		return r
	}
	if c := d.str(join(path, "cloud"), m["cloud"]); c != "" {
		r.Cloud = d.cloud(join(path, "cloud"), c)
	}
	r.Region = d.str(join(path, "region"), m["region"])
	r.Zone = d.str(join(path, "zone"), m["zone"])
	r.Infra = d.str(join(path, "infra"), m["infra"])
	if r.Infra != "" {
		d.infra(join(path, "infra"), &r)
	}
	r.InstanceType = d.str(join(path, "instance_type"), m["instance_type"])
	r.CPUs = d.quantity(join(path, "cpus"), m["cpus"], false)
	r.Memory = d.quantity(join(path, "memory"), m["memory"], true)
	accPath, accRaw := join(path, "accelerators"), m["accelerators"]
	if g, present := m["gpus"]; present {
		if _, both := m["accelerators"]; both {
			d.ps.missing(join(path, "gpus"), "cannot be used with accelerators: gpus is SkyPilot's other name for it; keep one of them")
		} else {
			accPath, accRaw = join(path, "gpus"), g
		}
	}
	d.shares = nil
	accs := d.accelerators(accPath, accRaw)
	shares := d.shares
	d.shares = nil
	// A Cloud TPU is refused here, or by accelerator_args when the
	// file gives those too: one message for the one missing feature.
	if _, tpuArgs := m["accelerator_args"]; !tpuArgs {
		for _, choice := range accs.choices {
			for name := range choice {
				if strings.HasPrefix(strings.ToLower(name), "tpu-") {
					d.ps.add(accPath, accRaw, "asks for a Cloud TPU (%s), which sortie does not launch; ask for GPUs instead", name)
				}
			}
		}
	}
	if candidate && len(accs.choices) > 1 {
		d.ps.add(accPath, accRaw, "lists several accelerators; a candidate takes one, so list each as its own candidate")
		accs.choices = nil
	}
	if len(accs.choices) == 1 {
		r.Accelerators = accs.choices[0]
	}
	if len(shares) > 0 {
		d.acceleratorShare(accPath, accRaw, &r, accs, shares, candidate)
	}
	r.UseSpot = d.boolean(join(path, "use_spot"), m["use_spot"])
	r.DiskSize = d.diskSize(join(path, "disk_size"), m["disk_size"])
	r.MaxHourlyCost = d.dollars(join(path, "max_hourly_cost"), m["max_hourly_cost"],
		"give the most one node may cost per hour in dollars, e.g. 2.5, or leave max_hourly_cost out for no limit")
	r.DiskTier = d.tier(join(path, "disk_tier"), m["disk_tier"], diskTiers())
	r.NetworkTier = d.tier(join(path, "network_tier"), m["network_tier"], networkTiers())
	r.Ports = d.ports(join(path, "ports"), m["ports"])
	r.Labels = d.labels(join(path, "labels"), m["labels"])
	images := d.imageID(join(path, "image_id"), m["image_id"])
	if candidate {
		r.ImageID = images.pick(d, join(path, "image_id"), r.Region, join(path, "region"), true)
		return r
	}
	if images.perRegion == nil {
		r.ImageID = images.one
	}
	_, hasAnyOf := m["any_of"]
	_, hasOrdered := m["ordered"]
	if hasAnyOf && hasOrdered {
		d.ps.missing(join(path, "ordered"), "cannot be used with any_of; keep one of them")
	}
	r.PlacementOrder = d.placementOrder(join(path, "placement"), m["placement"])
	r.AnyOf = d.candidates(join(path, "any_of"), m["any_of"], r)
	r.Ordered = d.candidates(join(path, "ordered"), m["ordered"], r)
	r.JobRecovery = d.jobRecovery(join(path, "job_recovery"), m["job_recovery"])
	d.checkImageTags(path, r, images)
	if len(accs.choices) > 1 {
		d.expandAccelerators(path, accPath, &r, accs)
	}
	if images.perRegion != nil {
		d.expandImages(path, &r, images)
	}
	d.checkEscalate(path, &r, m["memory"] != nil, m["cpus"] != nil)
	if r.AcceleratorShare > 0 {
		// A candidate or an escalation would give another model or count
		// with the fraction still asked of it: the fraction stands alone.
		for _, field := range []string{"any_of", "ordered"} {
			if _, ok := m[field]; ok {
				d.ps.add(join(path, field), m[field], "cannot be combined with a fraction of an accelerator (%s); ask the fraction alone, or whole counts in candidates", shareText(r))
			}
		}
		if jr := r.JobRecovery; jr != nil && jr.Escalate != nil && len(jr.Escalate.Accelerators) > 0 {
			d.ps.add(join(path, "job_recovery.escalate.accelerators"), jr.Escalate.Accelerators,
				"cannot climb from a fraction of an accelerator (%s); escalate from a whole count, or drop the accelerator rungs", shareText(r))
		}
	}
	return r
}

// otherClouds are the clouds SkyPilot knows and sortie has no provider
// for, by the names (and aliases) SkyPilot accepts.
func (d *decoder) otherClouds() map[string]string {
	m := map[string]string{
		"azure": "azure", "lambda": "lambda",
		"runpod": "runpod", "oci": "oci", "ibm": "ibm", "fluidstack": "fluidstack",
		"paperspace": "paperspace", "cudo": "cudo", "do": "do", "nebius": "nebius",
		"vast": "vast", "scp": "scp", "vsphere": "vsphere", "ssh": "ssh",
		"hyperbolic": "hyperbolic", "slurm": "slurm", "seeweb": "seeweb",
		"shadeform": "shadeform", "primeintellect": "primeintellect", "coreweave": "coreweave",
	}
	// A cloud sortie provides since is sortie's.
	for name := range m {
		if _, ok := d.clouds.Lookup(name); ok {
			delete(m, name)
		}
	}
	return m
}

// otherCloud names the cloud sortie does not provide yet that a candidate
// asks for by cloud or infra, or is empty.
func (d *decoder) otherCloud(item any) string {
	m, _ := item.(map[string]any)
	for _, key := range []string{"cloud", "infra"} {
		s, _ := m[key].(string)
		first, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "/")
		if name := d.otherClouds()[first]; name != "" {
			return name
		}
	}
	return ""
}

// oldRecoveryName reads spot_recovery, the name older SkyPilot releases
// gave job_recovery, as job_recovery.
func (d *decoder) oldRecoveryName(path string, m map[string]any) map[string]any {
	old, present := m["spot_recovery"]
	if !present {
		return m
	}
	if _, both := m["job_recovery"]; both {
		d.ps.missing(join(path, "spot_recovery"), "cannot be used with job_recovery: it is the older name for it; keep job_recovery")
	} else {
		d.warn(join(path, "spot_recovery"), "read as job_recovery, the name SkyPilot uses now")
	}
	out := maps.Clone(m)
	delete(out, "spot_recovery")
	if _, both := m["job_recovery"]; !both {
		out["job_recovery"] = old
	}
	return out
}

func (d *decoder) cloud(path, c string) string {
	lc := strings.ToLower(strings.TrimSpace(c))
	if known, ok := d.clouds.Lookup(lc); ok {
		return known.Name
	}
	if name, ok := d.otherClouds()[lc]; ok {
		also := ""
		if name != lc {
			also = " (" + name + ")"
		}
		d.ps.add(path, c, "is not a provider of sortie yet%s; sortie runs on %s", also, strings.Join(d.clouds.userNames(), ", "))
		return ""
	}
	if s := suggest(lc, d.clouds.Names()); s != "" {
		d.ps.add(path, c, "is not a cloud sortie supports; did you mean %q?", s)
	} else {
		d.ps.add(path, c, "is not a cloud sortie supports; use one of %s", strings.Join(d.clouds.Names(), ", "))
	}
	return ""
}

// canonicalCloud is c's own name when c is an alias (k8s: kubernetes).
func (d *decoder) canonicalCloud(c string) string {
	if known, ok := d.clouds.Lookup(c); ok && !strings.EqualFold(strings.TrimSpace(c), known.Name) {
		return known.Name
	}
	return c
}

// infra reads "cloud[/region[/zone]]" ("*" or empty for any part) into r's
// cloud, region and zone; a part that contradicts an explicit field is a
// problem rather than a silent winner.
func (d *decoder) infra(path string, r *Resources) {
	parts := strings.Split(strings.TrimSpace(r.Infra), "/")
	// A Kubernetes context may hold slashes: name the cloud before counting.
	if first := strings.ToLower(strings.TrimSpace(parts[0])); d.otherClouds()[first] != "" {
		d.cloud(path, parts[0])
		return
	}
	if known, ok := d.clouds.Lookup(parts[0]); ok && known.WholeRegion {
		// infra: k8s/CONTEXT: the region, slashes and all, and no zone.
		parts = []string{parts[0], strings.Join(parts[1:], "/")}
	}
	if len(parts) > 3 {
		d.ps.add(path, r.Infra, "has too many parts; write CLOUD, CLOUD/REGION or CLOUD/REGION/ZONE")
		return
	}
	fields := []struct {
		name string
		dst  *string
	}{{"cloud", &r.Cloud}, {"region", &r.Region}, {"zone", &r.Zone}}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		if part == "" || part == "*" {
			continue
		}
		f := fields[i]
		if i == 0 {
			part = d.cloud(path, part)
			if part == "" {
				return
			}
		}
		same := *f.dst == part || (i == 0 && strings.EqualFold(d.canonicalCloud(*f.dst), part))
		if *f.dst != "" && !same {
			d.ps.add(path, r.Infra, "conflicts with %s: %q; keep one of them, or make them agree", f.name, *f.dst)
			continue
		}
		*f.dst = part
	}
}

var quantityRE = lazyRegexp(`^(-?(?:\d+(?:\.\d*)?|\.\d+))\s*([A-Za-z]*)\s*(\+?)$`)

// memoryUnits are SkyPilot's size suffixes, as a factor to GB.
func memoryUnits() map[string]float64 {
	return map[string]float64{
		"": 1, "b": 1.0 / (1 << 30),
		"k": 1.0 / (1 << 20), "kb": 1.0 / (1 << 20), "ki": 1.0 / (1 << 20), "kib": 1.0 / (1 << 20),
		"m": 1.0 / (1 << 10), "mb": 1.0 / (1 << 10), "mi": 1.0 / (1 << 10), "mib": 1.0 / (1 << 10),
		"g": 1, "gb": 1, "gi": 1, "gib": 1,
		"t": 1 << 10, "tb": 1 << 10, "ti": 1 << 10, "tib": 1 << 10,
		"p": 1 << 20, "pb": 1 << 20, "pi": 1 << 20, "pib": 1 << 20,
	}
}

// quantity reads cpus or memory: a number, "N" or "N+" (at least N). Memory
// may carry a unit (512MB, 1TB) and is normalised to GB, so "32GB+" and
// "32+" are the same request.
func (d *decoder) quantity(path string, v any, memory bool) string {
	fix := `use a number, or "N+" for at least N`
	if memory {
		fix = `use a size in GB, or "N+" for at least N (units such as 512MB or 1TB also work)`
	}
	var text string
	switch v := v.(type) {
	case nil:
		return ""
	case json.Number:
		text = v.String()
	case string:
		text = strings.TrimSpace(v)
	default:
		d.ps.add(path, v, "is %s; %s", typeName(v), fix)
		return ""
	}
	m := quantityRE().FindStringSubmatch(text)
	if m == nil {
		d.ps.add(path, v, "is not an amount; %s", fix)
		return ""
	}
	factor := 1.0
	if m[2] != "" {
		f, ok := memoryUnits()[strings.ToLower(m[2])]
		if !memory || !ok {
			d.ps.add(path, v, "has an unknown unit %q; %s", m[2], fix)
			return ""
		}
		factor = f
	}
	if len(m[1]) > maxAmountDigits {
		d.ps.add(path, v, "has more than %d digits; %s", maxAmountDigits, fix)
		return ""
	}
	// Exact arithmetic: a float would turn 12345678901234567890123 into
	// 12345678901234568000000. Every unit is a power of two, so the
	// amount in GB is a finite decimal with at most 20 more places.
	n, ok := new(big.Rat).SetString(m[1])
	if !ok {
		d.ps.add(path, v, "is not an amount; %s", fix)
		return ""
	}
	n.Mul(n, new(big.Rat).SetFloat64(factor))
	if n.Sign() <= 0 {
		d.ps.add(path, v, "is not more than 0; %s", fix)
		return ""
	}
	_, frac, _ := strings.Cut(m[1], ".")
	text = n.FloatString(len(frac) + 20)
	text = strings.TrimRight(strings.TrimRight(text, "0"), ".")
	return text + m[3]
}

// maxAmountDigits bounds the text of a cpus or memory amount, far above
// any real one, so exact arithmetic on it stays cheap.
const maxAmountDigits = 64

func (d *decoder) count(path string, v any) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		d.ps.add(path, v, "is %s; give a whole count of 1 or more", typeName(v))
		return 0, false
	}
	if f, err := num.Float64(); err == nil && f > 0 && f < 1 {
		d.shares = append(d.shares, share{path: path, value: f})
		return 1, true
	}
	n, problem := parseCount(num)
	if problem != "" {
		d.ps.add(path, v, "%s", problem)
		return 0, false
	}
	return n, true
}

// share is a fractional accelerator count read (A100:0.5), where.
type share struct {
	path  string
	value float64
}

// parseCount reads an accelerator count, or says what is wrong with it.
func parseCount(num json.Number) (int, string) {
	f, err := num.Float64()
	switch {
	case err != nil:
		return 0, "is not a number; give a whole count of 1 or more"
	case f != math.Trunc(f):
		return 0, "is a fraction above 1; a fraction of one accelerator (0.5) runs on Kubernetes where GPUs are shared, else give a whole count of 1 or more"
	case f < 1 || f > math.MaxInt32:
		return 0, "is out of range; give a whole count of 1 or more"
	}
	return int(f), ""
}

func (d *decoder) candidates(path string, v any, base Resources) []Resources {
	if v == nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		d.ps.add(path, v, "is %s; expected a list of candidate resources, e.g. [{region: us-east-1}, {region: us-west-2}]", typeName(v))
		return nil
	}
	if len(items) == 0 {
		d.ps.add(path, v, "is empty; list at least one candidate, or remove it")
		return nil
	}
	// SkyPilot skips a candidate on a cloud that is not enabled and refuses
	// the task only when every candidate is on one: do the same with the
	// clouds sortie does not provide yet.
	var skipped []string
	if kept := slices.DeleteFunc(slices.Clone(items), func(item any) bool {
		name := d.otherCloud(item)
		if name != "" && !slices.Contains(skipped, name) {
			skipped = append(skipped, name)
		}
		return name != ""
	}); len(kept) > 0 && len(kept) < len(items) {
		d.warn(path, "skipped %d candidate(s) on %s, not a provider of sortie yet; the other %d stay", len(items)-len(kept), strings.Join(skipped, ", "), len(kept))
		items = kept
	}
	out := make([]Resources, len(items))
	for i, item := range items {
		p := index(path, i)
		out[i] = d.resources(p, item, true)
		// The typed field cannot tell "use_spot: false" from unset, so a
		// candidate cannot take spot away from the base; say so rather than
		// ignore it.
		if m, ok := item.(map[string]any); ok && m["use_spot"] == false && base.UseSpot {
			d.ps.add(join(p, "use_spot"), false, "cannot override use_spot: true of resources; set use_spot in each candidate instead")
		}
	}
	return out
}

func strategies() []string {
	return []string{string(Failover), string(EagerNextRegion), string(NoRecovery)}
}

// jobRecoveryFields are the keys of a job_recovery mapping.
var jobRecoveryFields = []string{"strategy", "max_restarts_on_errors", "recover_on_exit_codes", "max_recoveries", "max_duration", "escalate", "keep_on_failure", "termination_grace", "confirm_failures", "confirm_counts_as_restart", "max_restarts_without_progress", "max_cost", "on_demand_after", "on_demand_after_cost"}

func (d *decoder) jobRecovery(path string, v any) *JobRecovery {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return &JobRecovery{Strategy: d.strategy(path, v)}
	case map[string]any:
	default:
		d.ps.add(path, v, "is %s; give a strategy (FAILOVER, EAGER_NEXT_REGION or NONE) or a mapping with %s", typeName(v), strings.Join(jobRecoveryFields, ", "))
		return nil
	}
	m, _ := d.mapping(path, v, jobRecoveryFields, nil)
	jr := &JobRecovery{}
	if s := d.str(join(path, "strategy"), m["strategy"]); s != "" {
		jr.Strategy = d.strategy(join(path, "strategy"), s)
	}
	if raw, present := m["max_restarts_on_errors"]; present {
		p := join(path, "max_restarts_on_errors")
		if n, ok := d.integer(p, raw); ok {
			if n < 0 {
				d.ps.add(p, raw, "is negative; use 0 or more (0: a failure with an unlisted exit code ends the job)")
			} else {
				jr.MaxRestartsOnErrors = n
			}
		}
	}
	jr.RecoverOnExitCodes = d.exitCodes(join(path, "recover_on_exit_codes"), m["recover_on_exit_codes"])
	jr.MaxRecoveries = d.maxRecoveries(join(path, "max_recoveries"), m["max_recoveries"])
	jr.MaxRestartsWithoutProgress = d.maxRestartsWithoutProgress(join(path, "max_restarts_without_progress"), m["max_restarts_without_progress"])
	jr.MaxDuration = d.maxDuration(join(path, "max_duration"), m["max_duration"])
	jr.MaxCost = d.dollars(join(path, "max_cost"), m["max_cost"],
		"give the most the job may cost in dollars through every recovery, e.g. 40, or leave max_cost out for no limit")
	jr.Escalate = d.escalate(join(path, "escalate"), m["escalate"])
	jr.KeepOnFailure = d.positiveDuration(join(path, "keep_on_failure"), m["keep_on_failure"], 0,
		"give how long to keep the failed cluster (e.g. \"30m\"), or leave keep_on_failure out to tear it down at once")
	jr.TerminationGrace = d.positiveDuration(join(path, "termination_grace"), m["termination_grace"], MaxTerminationGrace,
		"give how long the task has between SIGTERM and SIGKILL (e.g. \"30s\"), or leave termination_grace out for 30s")
	jr.ConfirmFailures = d.confirmFailures(join(path, "confirm_failures"), m["confirm_failures"])
	jr.ConfirmCountsAsRestart = d.boolean(join(path, "confirm_counts_as_restart"), m["confirm_counts_as_restart"])
	if raw, present := m["on_demand_after"]; present && raw != nil {
		p := join(path, "on_demand_after")
		if n, ok := d.integer(p, raw); ok {
			if n < 1 {
				d.ps.add(p, raw, "is less than 1; give how many preemptions switch the task to on-demand (e.g. 3), or leave it out to stay on spot")
			} else {
				jr.OnDemandAfter = n
			}
		}
	}
	jr.OnDemandAfterCost = d.boolean(join(path, "on_demand_after_cost"), m["on_demand_after_cost"])
	return jr
}

// placementOrder reads resources.placement: cheapest or written,
// case-insensitive; written (the default) is stored as "".
func (d *decoder) placementOrder(path string, v any) string {
	s := strings.ToLower(strings.TrimSpace(d.str(path, v)))
	switch s {
	case "", PlaceWritten:
		return ""
	case PlaceCheapest:
		return PlaceCheapest
	}
	d.ps.add(path, v, "is not a placement order; give cheapest (by current price) or written (the order the candidates are written in, the default)")
	return ""
}

// maxRecoveries reads job_recovery.max_recoveries: nil (absent) is no limit.
func (d *decoder) maxRecoveries(path string, raw any) *int {
	n, ok := d.integer(path, raw)
	switch {
	case !ok:
		return nil
	case n < 0:
		d.ps.add(path, raw, "is negative; use 1 or more, or leave it out for no limit")
		return nil
	case n == 0:
		d.ps.add(path, raw, "would never recover; write job_recovery: none (or strategy: NONE) for that, or use 1 or more")
		return nil
	}
	return &n
}

// maxRestartsWithoutProgress reads job_recovery.max_restarts_without_progress:
// a whole number, 0 or more; nil (absent) is no limit.
func (d *decoder) maxRestartsWithoutProgress(path string, raw any) *int {
	const fix = "give how many restarts in a row may make no progress, 0 or more (e.g. 3), or leave it out for no limit"
	if raw == nil {
		return nil
	}
	num, isNum := raw.(json.Number)
	if !isNum {
		d.ps.add(path, raw, "is %s; %s", typeName(raw), fix)
		return nil
	}
	n, err := strconv.Atoi(num.String())
	switch {
	case err != nil:
		d.ps.add(path, raw, "is not a whole number; %s", fix)
		return nil
	case n < 0:
		d.ps.add(path, raw, "is negative; %s", fix)
		return nil
	}
	return &n
}

// maxDuration reads job_recovery.max_duration: a Go duration ("12h",
// "1h30m", "90m", "45s") or whole days ("2d"); zero when absent.
func (d *decoder) maxDuration(path string, raw any) Duration {
	if raw == nil {
		return 0
	}
	s, isString := raw.(string)
	if !isString {
		d.ps.add(path, raw, "is %s; give a duration with its unit, e.g. \"12h\" or \"90m\"", typeName(raw))
		return 0
	}
	v, err := parseDuration(s)
	switch {
	case err != nil:
		d.ps.add(path, s, "is not a duration; write a number and a unit (s, m, h, d), e.g. \"12h\" or \"90m\"")
		return 0
	case v <= 0:
		d.ps.add(path, s, "is not positive; give a limit above zero, or leave max_duration out for none")
		return 0
	}
	return Duration(v)
}

// positiveDuration reads a duration that must be above zero, and at most
// most when most is set; hint says what to give instead of one that is
// not positive. Absent is zero.
func (d *decoder) positiveDuration(path string, raw any, most time.Duration, hint string) Duration {
	if raw == nil {
		return 0
	}
	s, isString := raw.(string)
	if !isString {
		d.ps.add(path, raw, "is %s; give a duration with its unit, e.g. \"30m\" or \"2h\"", typeName(raw))
		return 0
	}
	v, err := parseDuration(s)
	switch {
	case err != nil:
		d.ps.add(path, s, "is not a duration; write a number and a unit (s, m, h, d), e.g. \"30m\" or \"2h\"")
		return 0
	case v <= 0:
		d.ps.add(path, s, "is not positive; %s", hint)
		return 0
	case most > 0 && v > most:
		d.ps.add(path, s, "is above %s, the most allowed; give %s or less", Duration(most), Duration(most))
		return 0
	}
	return Duration(v)
}

// maxDays is the most days a time.Duration holds.
const maxDays = math.MaxInt64 / int64(24*time.Hour)

// parseDuration is time.ParseDuration with whole days ("2d") added.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > maxDays || n < -maxDays {
			return 0, fmt.Errorf("bad day count %q", days)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

func (d *decoder) strategy(path, s string) Strategy {
	up := strings.ToUpper(strings.TrimSpace(s))
	if slices.Contains(strategies(), up) {
		return Strategy(up)
	}
	if sug := suggest(up, strategies()); sug != "" {
		d.ps.add(path, s, "is not a recovery strategy; did you mean %q?", sug)
	} else {
		d.ps.add(path, s, "is not a recovery strategy; use FAILOVER, EAGER_NEXT_REGION or NONE")
	}
	return ""
}

// exitCodes reads one code or a list of distinct codes, each 0..255.
func (d *decoder) exitCodes(path string, v any) []int {
	var items []any
	var paths []string
	switch v := v.(type) {
	case nil:
		return nil
	case json.Number:
		items, paths = []any{v}, []string{path}
	case []any:
		items = v
		for i := range v {
			paths = append(paths, index(path, i))
		}
	default:
		d.ps.add(path, v, "is %s; give an exit code or a list of them, e.g. [29, 137]", typeName(v))
		return nil
	}
	var codes []int
	for i, item := range items {
		if _, isNum := item.(json.Number); !isNum {
			d.ps.add(paths[i], item, "is %s; an exit code is a whole number from 0 to 255", typeName(item))
			continue
		}
		n, ok := d.integer(paths[i], item)
		if !ok {
			continue
		}
		switch {
		case n < 0 || n > 255:
			d.ps.add(paths[i], item, "is not an exit code (0-255)")
		case slices.Contains(codes, n):
			d.ps.add(paths[i], item, "is listed twice; list each exit code once")
		default:
			codes = append(codes, n)
		}
	}
	return codes
}

// acceleratorShare takes a fraction of one accelerator (A100:0.5,
// SkyPilot's fractional count): it runs only on a cloud that shares GPUs
// (Kubernetes, where its configuration names a shared GPU resource), so
// the resources must name that cloud, ask one model and no alternatives.
func (d *decoder) acceleratorShare(path string, raw any, r *Resources, accs accelSpec, shares []share, candidate bool) {
	var sharing []string
	for _, c := range d.clouds {
		if c.SharesAccelerators {
			sharing = append(sharing, c.Name)
		}
	}
	where := strings.Join(sharing, " or ")
	if where == "" {
		where = "no cloud sortie provides here"
	}
	c, known := d.clouds.Lookup(r.Cloud)
	switch {
	case candidate:
		d.ps.add(path, raw, "asks a fraction of an accelerator in a candidate; give it in resources, with the cloud that shares GPUs (%s)", where)
	case len(accs.choices) != 1:
		d.ps.add(path, raw, "lists alternatives with a fraction of an accelerator; a fraction is one model on one cloud, so ask it alone")
	case r.Cloud == "":
		d.ps.add(path, raw, "asks a fraction of an accelerator, which only %s gives (where its config names a shared GPU resource: time-slicing or MIG); add cloud: %s, or ask a whole count", where, where)
	case !known || !c.SharesAccelerators:
		d.ps.add(path, raw, "asks a fraction of an accelerator, which %s cannot give: its machines have whole GPUs (only %s shares them); ask a whole count", r.Cloud, where)
	default:
		r.AcceleratorShare = shares[0].value
	}
}

// shareText writes r's fraction of one accelerator as the file does
// (A100:0.5).
func shareText(r Resources) string {
	for name := range r.Accelerators {
		return fmt.Sprintf("%s:%g", name, r.AcceleratorShare)
	}
	return ""
}
