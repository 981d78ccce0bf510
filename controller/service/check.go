package service

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"sortie/controller/clouds"
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

// SSHKey is sortie's SSH identity: what the VM clouds log in to their
// instances with.
type SSHKey struct {
	// Path is the private key's file; the public half is Path + ".pub".
	Path string `json:"path"`
	// PublicKey is one authorized_keys line.
	PublicKey string `json:"public_key"`
	// Created says this call generated it.
	Created bool `json:"created"`
}

// SSHKey returns sortie's SSH key of this home, generating it when missing
// (as the first launch on a VM cloud would).
func (s *Service) SSHKey() (SSHKey, error) {
	dir := home.Keys(s.Home)
	k := SSHKey{Path: filepath.Join(dir, sshrun.KeyFile)}
	_, err := os.Stat(k.Path)
	k.Created = errors.Is(err, fs.ErrNotExist)
	_, line, err := sshrun.LoadOrCreateKey(dir)
	if err != nil {
		return SSHKey{}, err
	}
	k.PublicKey = line
	return k, nil
}
