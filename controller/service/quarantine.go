package service

import (
	"context"
	"fmt"

	"sortie/controller/contract"
	"sortie/strategy"
)

// Quarantine lists what is quarantined now (zones, instance types in a
// zone, Kubernetes nodes), by placement.
func (s *Service) Quarantine(ctx context.Context) ([]contract.QuarantineView, error) {
	qs, err := s.Store.Quarantined(ctx, s.Config.QuarantinePolicy())
	if err != nil {
		return nil, fmt.Errorf("list the quarantined placements: %w", err)
	}
	out := make([]contract.QuarantineView, 0, len(qs))
	for _, q := range qs {
		k := q.Key()
		out = append(out, contract.QuarantineView{Placement: k.String(), Level: k.Level(),
			Cloud: k.Placement.Cloud, Region: k.Placement.Region, Zone: k.Placement.Zone, InstanceType: orNull(k.InstanceType), Node: orNull(k.Host),
			Jobs: q.Jobs, Weight: q.Weight, Until: q.Until.UTC(), Cause: q.Cause, Reason: q.Reason()})
	}
	return out, nil
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ClearQuarantine makes the failures on k so far no longer count (a
// zone's clear clears its instance types too): it is tried in the
// strategy's order again until other jobs fail there. Only an admin may,
// as it changes where every user's jobs launch.
func (s *Service) ClearQuarantine(ctx context.Context, k strategy.QuarantineKey) (*contract.QuarantineCleared, error) {
	if !s.asker().Admin {
		return nil, &contract.AdminError{Verb: "clear a quarantine"}
	}
	k = k.Normal()
	qs, err := s.Store.Quarantined(ctx, s.Config.QuarantinePolicy())
	if err != nil {
		return nil, fmt.Errorf("list the quarantined placements: %w", err)
	}
	at, err := s.Store.ClearQuarantine(ctx, k, s.asker().Name)
	if err != nil {
		return nil, err
	}
	was := false
	for _, q := range qs {
		was = was || q.Key() == k
	}
	return &contract.QuarantineCleared{Placement: k.String(), Level: k.Level(),
		Cloud: k.Placement.Cloud, Region: k.Placement.Region, Zone: k.Placement.Zone, InstanceType: orNull(k.InstanceType), Node: orNull(k.Host),
		ClearedAt: at.UTC(), WasQuarantined: was}, nil
}
