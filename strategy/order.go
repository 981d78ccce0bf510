package strategy

import (
	"strings"

	"sortie/schema"
)

// Order returns the candidates to try, in order, for one round of launch
// tries. The input is never modified.
//
// preempted is where the previous attempt was taken away (nil on a first
// launch, or on a restart after a user failure: then the candidates are
// tried in their own order). round is 0 for the first round after that
// event and counts up each time every candidate has failed.
//
//   - FAILOVER stays close to the data and the cluster that just ran: the
//     preempted region's other zones first, then the preempted zone itself
//     (a zone that just reclaimed spot capacity is the least likely to have
//     it again), then every other candidate in order. Every round alike.
//   - EAGER_NEXT_REGION (also for "" and unknown names, as the schema
//     defaults to it) skips every candidate in the preempted region on round
//     0, unless that leaves none, when it falls back to FAILOVER's order.
//     From round 1 on, every candidate is tried in its own order: by then
//     the other regions have all failed once too.
//
// A region is the same when both cloud (case-insensitively) and region match.
// A pinned region or zone is already enforced by Candidates.
func Order(s schema.Strategy, cands []Candidate, preempted *schema.Placement, round int) []Candidate {
	if preempted == nil {
		return append([]Candidate(nil), cands...)
	}
	if strings.EqualFold(string(s), string(schema.Failover)) {
		return failoverOrder(cands, *preempted)
	}
	if round > 0 {
		return append([]Candidate(nil), cands...)
	}
	var elsewhere []Candidate
	for _, c := range cands {
		if !sameRegion(c.Placement, *preempted) {
			elsewhere = append(elsewhere, c)
		}
	}
	if len(elsewhere) == 0 {
		return failoverOrder(cands, *preempted)
	}
	return elsewhere
}

// failoverOrder is the preempted region's other zones, the preempted zone,
// then the rest, each group in candidate order.
func failoverOrder(cands []Candidate, preempted schema.Placement) []Candidate {
	var otherZones, sameZone, rest []Candidate
	for _, c := range cands {
		switch {
		case !sameRegion(c.Placement, preempted):
			rest = append(rest, c)
		case preempted.Zone != "" && c.Placement.Zone == preempted.Zone:
			sameZone = append(sameZone, c)
		default:
			otherZones = append(otherZones, c)
		}
	}
	out := make([]Candidate, 0, len(cands))
	out = append(out, otherZones...)
	out = append(out, sameZone...)
	return append(out, rest...)
}

func sameRegion(a, b schema.Placement) bool {
	return strings.EqualFold(a.Cloud, b.Cloud) && a.Region == b.Region
}
