package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sortie/schema"
)

type capacityFile struct {
	Off []schema.Placement `json:"off"`
}

func capacityPath(home string) string { return filepath.Join(root(home), "capacity.json") }

// SetCapacity turns capacity at p on or off for every provider over home,
// including one in another process. A placement without a zone stands for its
// whole region.
func SetCapacity(home string, p schema.Placement, on bool) error {
	if home == "" {
		return errors.New("set local capacity: home is empty; set SORTIE_HOME")
	}
	if p.Cloud == "" {
		p.Cloud = CloudName
	}
	if p.Cloud != CloudName || p.Region == "" {
		return fmt.Errorf("set local capacity: placement %s: want REGION or REGION/ZONE of the local provider", p)
	}
	unlock, err := lock(home)
	if err != nil {
		return err
	}
	defer unlock()
	off, err := Capacity(home)
	if err != nil {
		return err
	}
	kept := []schema.Placement{}
	for _, o := range off {
		if o != p {
			kept = append(kept, o)
		}
	}
	if !on {
		kept = append(kept, p)
	}
	if err := writeJSON(capacityPath(home), capacityFile{Off: kept}); err != nil {
		return fmt.Errorf("set local capacity of %s: %w", p, err)
	}
	return nil
}

// Capacity returns the placements whose capacity is off.
func Capacity(home string) (off []schema.Placement, err error) {
	b, err := os.ReadFile(capacityPath(home))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read local capacity: %w", err)
	}
	var f capacityFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read %s: %w; fix or remove it", capacityPath(home), err)
	}
	return f.Off, nil
}

// blocked returns the entry of off that covers at, if any.
func blocked(off []schema.Placement, at schema.Placement) (schema.Placement, bool) {
	for _, o := range off {
		if o.Cloud == at.Cloud && o.Region == at.Region && (o.Zone == "" || o.Zone == at.Zone) {
			return o, true
		}
	}
	return schema.Placement{}, false
}

// capacityArg is p as the capacity command takes it: REGION or REGION/ZONE.
func capacityArg(p schema.Placement) string {
	if p.Zone == "" {
		return p.Region
	}
	return p.Region + "/" + p.Zone
}
