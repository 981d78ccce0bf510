package service

import (
	"sortie/controller/clouds"
	"sortie/schema"
)

// parseWithEnvs parses a task file with the command line's envs applied
// to every task, before ${VAR} substitution; it may name every cloud the
// registry holds.
func parseWithEnvs(data []byte, envs map[string]string) (*schema.Pipeline, error) {
	return schema.ParseWith(data, schema.ParseOptions{Env: envs, Clouds: clouds.Schema()})
}
