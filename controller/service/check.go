package service

import (
	"context"

	"sortie/controller/clouds"
)

// Check reports which clouds are usable, and why not.
func (s *Service) Check(ctx context.Context) ([]clouds.Check, error) {
	if s.CheckClouds != nil {
		return s.CheckClouds(ctx)
	}
	return s.Clouds.Check(ctx), nil
}
