package service

import (
	"context"

	"sortie/controller/clouds"
	"sortie/controller/home"
)

// Check reports which clouds are usable, and why not.
func (s *Service) Check(ctx context.Context) ([]clouds.Check, error) {
	if s.CheckClouds != nil {
		return s.CheckClouds(ctx)
	}
	return s.Clouds.Check(ctx), nil
}

// HomeWarning says that the home is open to other users and how to make it
// private; "" when it is private.
func (s *Service) HomeWarning() (string, error) { return home.ExposedWarning(s.Home) }
