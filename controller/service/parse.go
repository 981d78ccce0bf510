package service

import (
	"fmt"

	"sortie/schema"
)

// parseWithEnvs parses a task file with the command line's envs applied
// to every task.
func parseWithEnvs(data []byte, envs map[string]string) (*schema.Pipeline, error) {
	p, err := schema.Parse(data)
	if err != nil || len(envs) == 0 {
		return p, err
	}
	var sets []string
	for i := range p.Tasks {
		prefix := ""
		if len(p.Tasks) > 1 {
			prefix = fmt.Sprintf("tasks[%d].", i)
		}
		for _, k := range sortedKeys(envs) {
			sets = append(sets, prefix+"envs."+k+"="+envs[k])
		}
	}
	out, _, err := schema.ApplySet(p, sets)
	if err != nil {
		return nil, fmt.Errorf("--env: %w", err)
	}
	return out, nil
}

// unresolved names what the pipeline still lacks to run.
func unresolved(*schema.Pipeline) error { return nil }

// warnings are the fields the file sets that sortie accepts and ignores.
func warnings(*schema.Pipeline) []string { return nil }
