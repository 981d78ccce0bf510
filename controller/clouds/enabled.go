package clouds

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Machine is what a cloud's Enabled reads of the machine it runs on: its
// environment and its files. The zero Machine is this process's.
type Machine struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

func (m Machine) getenv(k string) string {
	if m.Getenv == nil {
		return os.Getenv(k)
	}
	return m.Getenv(k)
}

func (m Machine) readFile(path string) ([]byte, error) {
	if m.ReadFile == nil {
		return os.ReadFile(path)
	}
	return m.ReadFile(path)
}

// home is the user's home directory, as the clouds' SDKs find it ($HOME);
// "" when it is not set.
func (m Machine) home() string { return m.getenv("HOME") }

// dmi is a field of the machine's firmware tables (/sys/class/dmi/id),
// which name the cloud a VM runs on; "" when it cannot be read.
func (m Machine) dmi(field string) string {
	b, err := m.readFile(filepath.Join("/sys/class/dmi/id", field))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// NotEnabledError says that a cloud cannot be launched on from here, and
// why: what its Enabled found missing.
type NotEnabledError struct {
	Cloud string
	Err   error
}

func (e *NotEnabledError) Error() string {
	return fmt.Sprintf("%s is not enabled here: %v", e.Cloud, e.Err)
}

func (e *NotEnabledError) Unwrap() error { return e.Err }

// Enabled says whether cloud ("" means local) can be launched on from m:
// nil, or a *NotEnabledError saying why not. The set's own entry for the
// cloud decides, else the registry's; a cloud without Enabled (local,
// sim) always is. It reads configuration, environment and local files
// only, so every launch can ask.
func (s *Set) Enabled(cloud string, m Machine) error {
	if cloud == "" {
		cloud = "local"
	}
	c, ok := s.clouds[cloud]
	if !ok {
		c = Lookup(cloud)
	}
	if c.Enabled == nil {
		return nil
	}
	if _, err := c.Enabled(s.cfg, m); err != nil {
		return &NotEnabledError{Cloud: cloud, Err: err}
	}
	return nil
}
