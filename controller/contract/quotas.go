package contract

import (
	"time"
)

// The sources of a limit in QuotaView.
const (
	// QuotaFromConfig is config.yaml's limits: section.
	QuotaFromConfig = "config"
	// QuotaFromServer is set through the server (`sortie server quotas
	// set`), replacing config.yaml's entry of its scope.
	QuotaFromServer = "quota"
	// QuotaFromNone: neither limits the scope (what `quotas unset`
	// leaves when config.yaml has no entry for it).
	QuotaFromNone = "none"
)

// QuotaView is one limit in effect: an item of `sortie server quotas -o
// json` and of GET /v1/quotas, and the answer of a set or unset.
type QuotaView struct {
	// Scope is server, per_user (every user without their own), user or
	// group.
	Scope string `json:"scope"`
	// Name is the user's or group's; "" for server and per_user.
	Name string `json:"name"`
	// Members are a group's users; null for other scopes.
	Members []string `json:"members" schema:"nullable"`
	// Limit is what the scope's running jobs may hold at once; a null
	// count is no limit.
	Limit UsageAmounts `json:"limit"`
	// Source is config, quota or none.
	Source string `json:"source"`
	// SetBy and SetAt say who set a quota and when; "" and null for
	// config.yaml's.
	SetBy string     `json:"set_by"`
	SetAt *time.Time `json:"set_at"`
	// ReplacesConfig says a quota replaces an entry config.yaml has for
	// the same scope (unset gives that entry back).
	ReplacesConfig bool `json:"replaces_config"`
}

// QuotaRequest is `sortie server quotas set` (PUT /v1/quotas) and, with
// only Scope and Name, `quotas unset` (POST /v1/quotas/unset). A count
// left null is no limit: a set replaces the scope's whole entry.
type QuotaRequest struct {
	Scope       string         `json:"scope"`
	Name        string         `json:"name"`
	RunningJobs *int           `json:"running_jobs"`
	Nodes       *int           `json:"nodes"`
	VCPUs       *int           `json:"vcpus"`
	GPUs        map[string]int `json:"gpus"`
	// HourlyCost is what running jobs may cost an hour, in dollars
	// (kept in whole cents).
	HourlyCost *float64 `json:"hourly_cost"`
	// Members are a group's users; left out, config.yaml's members of
	// the group are kept.
	Members []string `json:"members"`
}
