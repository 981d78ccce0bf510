package strategy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"sortie/schema"
)

// Classes of a failed launch try; the same words as provision's error
// classes, which this package cannot import.
const (
	ClassCapacity  = "capacity"  // no capacity or quota there; the next candidate is tried
	ClassPrechecks = "prechecks" // no retry can fix it; the job ends FAILED_PRECHECKS
	ClassTransient = "transient" // anything else; tried again next round
	// ClassOverHourlyCost: the placement's price is above the task's
	// max_hourly_cost (OverHourlyCost); it was not launched.
	ClassOverHourlyCost = "over_max_hourly_cost"
)

// LaunchTry is one failed launch try, kept to build FAILED_NO_RESOURCE
// reasons and the PENDING status text, and listed by `jobs show`.
type LaunchTry struct {
	Placement schema.Placement
	Class     string // ClassCapacity, ClassPrechecks or ClassTransient
	Message   string // the provider's error text
}

// NoResourceReason is the failure reason of a job that spent every round of
// launch tries: each placement tried, in the order first tried, how many
// times, and why its last try failed.
//
//	no resources after 3 rounds; tried local/local-a 3 times: no capacity (zone full); local/local-b 3 times: no capacity (zone full)
func NoResourceReason(tries []LaunchTry, rounds int) string {
	var b strings.Builder
	b.WriteString("no resources after ")
	b.WriteString(plural(rounds, "round"))
	groups := byPlacement(tries)
	if len(groups) == 0 {
		b.WriteString("; no placement was tried")
		return b.String()
	}
	b.WriteString("; tried ")
	for i, g := range groups {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s: %s", where(g.placement), times(g.count), classPhrase(g.last.Class))
		if g.last.Message != "" {
			b.WriteString(" (" + g.last.Message + ")")
		}
	}
	return b.String()
}

// BackingOffReason is the PENDING status text while sortie waits wait
// before its next round of launch tries, from the tries of the round that
// just failed, placements grouped by why they failed:
//
//	no capacity in local/local-a, local/local-b; next try in 40s
func BackingOffReason(tries []LaunchTry, wait time.Duration) string {
	var classes []string
	places := map[string][]string{}
	for _, g := range byPlacement(tries) {
		c := g.last.Class
		if !slices.Contains(classes, c) {
			classes = append(classes, c)
		}
		places[c] = append(places[c], where(g.placement))
	}
	parts := make([]string, 0, len(classes)+1)
	for _, c := range classes {
		parts = append(parts, classPhrase(c)+" in "+strings.Join(places[c], ", "))
	}
	if len(parts) == 0 {
		parts = append(parts, "waiting to launch")
	}
	next := "next try now"
	if wait > 0 {
		next = "next try in " + formatWait(wait)
	}
	return strings.Join(append(parts, next), "; ")
}

type tryGroup struct {
	placement schema.Placement
	count     int
	last      LaunchTry
}

// byPlacement groups tries by placement, in the order first tried.
func byPlacement(tries []LaunchTry) []tryGroup {
	var groups []tryGroup
	for _, t := range tries {
		i := slices.IndexFunc(groups, func(g tryGroup) bool { return g.placement == t.Placement })
		if i < 0 {
			groups = append(groups, tryGroup{placement: t.Placement})
			i = len(groups) - 1
		}
		groups[i].count++
		groups[i].last = t
	}
	return groups
}

func classPhrase(class string) string {
	switch class {
	case ClassCapacity:
		return "no capacity"
	case ClassPrechecks:
		return "cannot launch"
	case ClassTransient:
		return "transient error"
	case ClassOverHourlyCost:
		return "over max_hourly_cost"
	}
	return "launch failed"
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// formatWait writes a wait in whole seconds without zero units: "40s",
// "1m30s", "5m", "1h2m". Under a second rounds up to "1s".
func formatWait(d time.Duration) string {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	h, m, sec := s/3600, s/60%60, s%60
	var b strings.Builder
	if h > 0 {
		b.WriteString(strconv.FormatInt(h, 10) + "h")
	}
	if m > 0 {
		b.WriteString(strconv.FormatInt(m, 10) + "m")
	}
	if sec > 0 || b.Len() == 0 {
		b.WriteString(strconv.FormatInt(sec, 10) + "s")
	}
	return b.String()
}
