package service

import (
	"context"
	"fmt"

	"sortie/controller/contract"
	"sortie/schema"
	"sortie/strategy"
)

// Quarantine lists the placements quarantined now, by placement.
func (s *Service) Quarantine(ctx context.Context) ([]contract.QuarantineView, error) {
	qs, err := s.Store.Quarantined(ctx, s.Config.QuarantinePolicy())
	if err != nil {
		return nil, fmt.Errorf("list the quarantined placements: %w", err)
	}
	out := make([]contract.QuarantineView, 0, len(qs))
	for _, q := range qs {
		out = append(out, contract.QuarantineView{Cloud: q.Placement.Cloud, Region: q.Placement.Region, Zone: q.Placement.Zone,
			Jobs: q.Jobs, Weight: q.Weight, Until: q.Until.UTC(), Cause: q.Cause, Reason: q.Reason()})
	}
	return out, nil
}

// ClearQuarantine makes the failures on p so far no longer count: it is
// tried in the strategy's order again until other jobs fail there. Only an
// admin may, as it changes where every user's jobs launch.
func (s *Service) ClearQuarantine(ctx context.Context, p schema.Placement) (*contract.QuarantineCleared, error) {
	if !s.asker().Admin {
		return nil, &contract.AdminError{Verb: "clear a quarantine"}
	}
	p = strategy.PlacementKey(p)
	qs, err := s.Store.Quarantined(ctx, s.Config.QuarantinePolicy())
	if err != nil {
		return nil, fmt.Errorf("list the quarantined placements: %w", err)
	}
	at, err := s.Store.ClearQuarantine(ctx, p, s.asker().Name)
	if err != nil {
		return nil, err
	}
	was := false
	for _, q := range qs {
		was = was || q.Placement == p
	}
	return &contract.QuarantineCleared{Cloud: p.Cloud, Region: p.Region, Zone: p.Zone, ClearedAt: at.UTC(), WasQuarantined: was}, nil
}
