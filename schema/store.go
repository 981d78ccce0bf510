package schema

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Marshal encodes the pipeline as JSON for storage, secret values removed
// (names kept). Unmarshal reads it back.
func (p *Pipeline) Marshal() ([]byte, error) {
	b, err := json.Marshal(p.WithoutSecretValues())
	if err != nil {
		return nil, fmt.Errorf("encode pipeline %q: %w", p.Name, err)
	}
	return b, nil
}

// Unmarshal decodes a pipeline written by Marshal. It trusts that the
// pipeline was validated before it was stored and only checks that it is
// whole; defaults are filled again, with clouds (those it was parsed with),
// so an older record reads like a new one.
func Unmarshal(b []byte, clouds Clouds) (*Pipeline, error) {
	var p Pipeline
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode stored pipeline: %w", err)
	}
	if len(p.Tasks) == 0 {
		return nil, errors.New("decode stored pipeline: it has no tasks")
	}
	for i, t := range p.Tasks {
		if t == nil {
			return nil, fmt.Errorf("decode stored pipeline: task %d is null", i)
		}
	}
	p.ApplyDefaults(clouds)
	return &p, nil
}
