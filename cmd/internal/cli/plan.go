package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"sortie/controller/contract"
)

// printPlan writes `jobs launch --dry-run`'s plan as a person reads it.
func printPlan(w io.Writer, p *contract.Plan) error {
	fmt.Fprintf(w, "Plan for job %s (dry run: nothing stored, nothing started)\n", printable(p.Name))
	fmt.Fprintf(w, "Input key: %s\n", orDash(p.InputKey))
	byController := false
	for _, t := range p.Tasks {
		name := "-"
		if t.Name != nil {
			name = *t.Name
		}
		fmt.Fprintf(w, "\nTask %d: %s   nodes: %d\n", t.Task, printable(name), t.NumNodes)
		codes := "none"
		if len(t.RecoverOnExitCodes) > 0 {
			codes = joinInts(t.RecoverOnExitCodes)
		}
		fmt.Fprintf(w, "  Recovery:    %s, max_restarts_on_errors %d, recover_on_exit_codes %s\n", t.Strategy, t.MaxRestartsOnErrors, codes)
		fmt.Fprintf(w, "  Limits:      %s\n", planLimits(t))
		if e := t.Escalate; e != nil {
			fmt.Fprintf(w, "  Escalate:    %s\n", planEscalate(e))
		}
		if len(t.Placements) == 0 {
			// Every cloud the task names is disabled here: what the
			// launch lacks, below, says why.
			why := ""
			if len(p.Missing) > 0 {
				why = " (see what it lacks, below)"
			}
			fmt.Fprintf(w, "  Placements:  none a launch from here could try%s\n", why)
		} else {
			fmt.Fprintln(w, "  Placements, in the order a first launch tries them:")
			// COST/HOUR, what an attempt there is expected to cost an
			// hour, is shown when a price of some placement is known.
			priced := slices.ContainsFunc(t.Placements, func(pl contract.PlacementPlan) bool { return pl.HourlyCost != nil })
			headers := []string{"    #", "WHERE", "REQUEST", "SPOT", "RESOLVED BY"}
			if priced {
				headers = append(headers, "COST/HOUR")
			}
			tb := newTable(w, headers...)
			for i, pl := range t.Placements {
				where := strings.Join(nonEmpty(pl.Cloud, deref(pl.Region), deref(pl.Zone)), "/")
				if pl.Region == nil {
					where += " (any region)"
				}
				spot := "no"
				if pl.UseSpot {
					spot = "yes"
				}
				row := []string{"    " + strconv.Itoa(i+1), where, describeRequest(pl), spot, pl.ResolvedBy}
				if priced {
					row = append(row, costText(pl.HourlyCost, false))
				}
				tb.row(row...)
				byController = byController || pl.ResolvedBy == "controller"
			}
			if err := tb.flush(); err != nil {
				return err
			}
			// What each SkyPilot image tag becomes, once per tag and cloud.
			var said []string
			for _, pl := range t.Placements {
				if pl.ImageLookup == nil || slices.Contains(said, pl.Cloud+" "+deref(pl.ImageID)) {
					continue
				}
				said = append(said, pl.Cloud+" "+deref(pl.ImageID))
				fmt.Fprintf(w, "    image %s on %s: %s\n", printable(deref(pl.ImageID)), pl.Cloud, printable(*pl.ImageLookup))
			}
		}
		fmt.Fprintf(w, "  Ports:       %s\n", listOrNone(t.Ports))
		workdir := ptrOrNone(t.Workdir)
		if r := t.WorkdirRepo; r != nil {
			workdir = r.URL + " (git clone on each node, ref " + orDash(r.Ref) + ")"
		}
		fmt.Fprintf(w, "  Workdir:     %s\n", printable(workdir))
		if len(t.FileMounts) == 0 {
			fmt.Fprintln(w, "  File mounts: none")
		} else {
			fmt.Fprintln(w, "  File mounts:")
			for _, m := range t.FileMounts {
				fmt.Fprintf(w, "    %s ← %s\n", printable(m.Path), printable(m.Source))
			}
		}
		fmt.Fprintf(w, "  Envs:        %s\n", printable(listOrNone(t.Envs)))
		fmt.Fprintf(w, "  Secrets:     %s\n", printable(listOrNone(t.Secrets)))
	}
	if byController {
		fmt.Fprintln(w, "\nPlacements resolved by the controller are listed as requested: the controller asks the cloud for its regions, zones and machine types when it launches.")
	}
	if len(p.Missing) > 0 {
		fmt.Fprintln(w, "\nThe file is valid, but a launch from here would be refused until these are given:")
		for _, m := range p.Missing {
			fmt.Fprintln(w, "  "+printable(m))
		}
	}
	return nil
}

// describeRequest says what a placement asks for: a machine type, or the
// amounts the smallest fitting type is chosen by; "-" on a cloud without
// sizes when nothing is asked.
func describeRequest(p contract.PlacementPlan) string {
	var parts []string
	add := func(v *string, prefix, suffix string) {
		if v != nil {
			parts = append(parts, prefix+*v+suffix)
		}
	}
	add(p.InstanceType, "", "")
	add(p.CPUs, "", " CPUs")
	add(p.Memory, "", " GB")
	add(p.Accelerators, "", "")
	if p.DiskSize != nil {
		parts = append(parts, fmt.Sprintf("disk %d GB", *p.DiskSize))
	}
	add(p.DiskTier, "disk tier ", "")
	add(p.NetworkTier, "network tier ", "")
	add(p.ImageID, "image ", "")
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func ptrOrNone(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

func joinInts(l []int) string {
	parts := make([]string, len(l))
	for i, n := range l {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

// planLimits says a task's limits: "max_duration 12h, max_recoveries 3",
// or that it has none.
func planLimits(t contract.TaskPlan) string {
	var parts []string
	if t.MaxDuration != nil {
		parts = append(parts, "max_duration "+*t.MaxDuration)
	}
	if t.MaxRecoveries != nil {
		parts = append(parts, "max_recoveries "+strconv.Itoa(*t.MaxRecoveries))
	}
	if t.MaxRestartsWithoutProgress != nil {
		parts = append(parts, "max_restarts_without_progress "+strconv.Itoa(*t.MaxRestartsWithoutProgress))
	}
	if len(parts) == 0 {
		return "none (no max_duration, no max_recoveries)"
	}
	return strings.Join(parts, ", ")
}

// planEscalate says what an escalation grows: "on exit codes 137: memory
// 2x up to 64 GB, accelerators L4:1 → A100:1".
func planEscalate(e *contract.EscalatePlan) string {
	var parts []string
	grow := func(what string, factor, ceiling *string, unit string) {
		if factor == nil {
			return
		}
		s := what + " " + *factor
		if ceiling != nil {
			s += " up to " + *ceiling + unit
		} else {
			s += " (no cap)"
		}
		parts = append(parts, s)
	}
	grow("memory", e.Memory, e.MaxMemory, " GB")
	grow("cpus", e.CPUs, e.MaxCPUs, "")
	if len(e.Accelerators) > 0 {
		parts = append(parts, "accelerators "+strings.Join(e.Accelerators, " → "))
	}
	return printable("on exit codes " + joinInts(e.OnExitCodes) + ": " + strings.Join(parts, ", "))
}
