package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Login is what `sortie login` keeps: the server and the token.
type Login struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// LoginPath is where the login is kept: $XDG_CONFIG_HOME/sortie/login.json,
// else ~/.config/sortie/login.json.
func LoginPath(getenv func(string) string) (string, error) {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		h := getenv("HOME")
		if h == "" {
			var err error
			if h, err = os.UserHomeDir(); err != nil {
				return "", err
			}
		}
		dir = filepath.Join(h, ".config")
	}
	return filepath.Join(dir, "sortie", "login.json"), nil
}

// SaveLogin keeps l for the user alone (0600 in a 0700 directory).
func SaveLogin(getenv func(string) string, l Login) (string, error) {
	p, err := LoginPath(getenv)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	b, _ := json.MarshalIndent(l, "", "  ")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// FromEnv is the server the CLI speaks to: SORTIE_API_URL with
// SORTIE_TOKEN, else the kept login; nil when neither is there.
func FromEnv(getenv func(string) string) (*Client, error) {
	if u := getenv("SORTIE_API_URL"); u != "" {
		tok := getenv("SORTIE_TOKEN")
		if tok == "" {
			return nil, fmt.Errorf("SORTIE_API_URL is set (%s) but SORTIE_TOKEN is not: set it to your token, or log in with `sortie login %s`", u, u)
		}
		return New(u, tok, getenv), nil
	}
	p, err := LoginPath(getenv)
	if err != nil {
		return nil, nil
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the login %s: %w", p, err)
	}
	var l Login
	if err := json.Unmarshal(b, &l); err != nil || l.URL == "" || l.Token == "" {
		return nil, fmt.Errorf("the login %s is not {\"url\", \"token\"}: log in again with `sortie login URL`", p)
	}
	return New(l.URL, strings.TrimSpace(l.Token), getenv), nil
}
