package service

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/provision/sshrun"
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

// SSHKey returns sortie's SSH key of this home, generating it when missing
// (as the first launch on a VM cloud would).
func (s *Service) SSHKey() (contract.SSHKey, error) {
	dir := home.Keys(s.Home)
	k := contract.SSHKey{Path: filepath.Join(dir, sshrun.KeyFile)}
	_, err := os.Stat(k.Path)
	k.Created = errors.Is(err, fs.ErrNotExist)
	_, line, err := sshrun.LoadOrCreateKey(dir)
	if err != nil {
		return contract.SSHKey{}, err
	}
	k.PublicKey = line
	return k, nil
}
