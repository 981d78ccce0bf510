package service

import (
	"sortie/schema"
)

// parseWithEnvs parses a task file with the command line's envs applied
// to every task, before ${VAR} substitution.
func parseWithEnvs(data []byte, envs map[string]string) (*schema.Pipeline, error) {
	return schema.ParseWith(data, schema.ParseOptions{Env: envs})
}
