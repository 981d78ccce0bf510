package api

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"sortie/controller/contract"
)

// openapiBase is the document's routes, requests and error, written by
// hand; the answers' schemas are added from their Go types.
//
//go:embed openapi.json
var openapiBase []byte

// OpenAPI is the API's OpenAPI 3.1 document, served at /v1/openapi.json:
// openapi.json with the schema of every answer, made from its Go type
// (package contract), and each route's answer pointing at it.
var OpenAPI = mustDocument()

// answer is what a route answers on success: a schema, or a list of it.
type answer struct {
	status, schema string
	list           bool
	contentType    string
}

// answers are the routes' answers, by route as Routes writes them.
var answers = map[string]answer{
	"GET /v1/me":                                    {status: "200", schema: "me"},
	"POST /v1/jobs":                                 {status: "201", schema: "launch_result"},
	"GET /v1/jobs":                                  {status: "200", schema: "job", list: true},
	"GET /v1/jobs/{id}":                             {status: "200", schema: "show"},
	"GET /v1/jobs/{id}/logs":                        {status: "200", schema: "log_event", contentType: "application/x-ndjson"},
	"POST /v1/jobs/{id}/cancel":                     {status: "200", schema: "cancelled"},
	"POST /v1/jobs/{id}/release":                    {status: "200", schema: "release"},
	"POST /v1/jobs/{id}/priority":                   {status: "200", schema: "priority"},
	"POST /v1/jobs/cancel":                          {status: "200", schema: "cancelled"},
	"POST /v1/jobs/retry":                           {status: "201", schema: "retry_results"},
	"GET /v1/failures":                              {status: "200", schema: "failure", list: true},
	"DELETE /v1/failures":                           {status: "200", schema: "forgotten"},
	"DELETE /v1/failures/{key}":                     {status: "200", schema: "forgotten"},
	"GET /v1/quarantine":                            {status: "200", schema: "quarantine", list: true},
	"DELETE /v1/quarantine/{cloud}/{region}/{zone}": {status: "200", schema: "quarantine_cleared"},
	"DELETE /v1/quarantine/{cloud}/{region}/{zone}/type/{instance_type}": {status: "200", schema: "quarantine_cleared"},
	"DELETE /v1/quarantine/{cloud}/{region}/node/{node}":                 {status: "200", schema: "quarantine_cleared"},
	"PUT /v1/blobs/{sha256}":                                             {status: "201", schema: "blob"},
	"GET /v1/prices":                                                     {status: "200", schema: "price", list: true},
	"POST /v1/prices/refresh":                                            {status: "200", schema: "prices_refreshed"},
	"GET /v1/quotas":                                                     {status: "200", schema: "quota", list: true},
	"PUT /v1/quotas":                                                     {status: "200", schema: "quota"},
	"POST /v1/quotas/unset":                                              {status: "200", schema: "quota"},
	"GET /v1/usage":                                                      {status: "200", schema: "usage", list: true},
}

func mustDocument() []byte {
	b, err := document()
	if err != nil {
		panic(err)
	}
	return b
}

func document() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapiBase, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	schemas, err := contract.Schemas()
	if err != nil {
		return nil, err
	}
	comps := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range schemas {
		if _, dup := comps[name]; dup {
			return nil, fmt.Errorf("openapi.json: schema %s is also made from Go", name)
		}
		comps[name] = s
	}
	paths := doc["paths"].(map[string]any)
	for route, a := range answers {
		method, path, _ := strings.Cut(route, " ")
		op, ok := paths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("openapi.json: no route %s", route)
		}
		resp, ok := op["responses"].(map[string]any)[a.status].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("openapi.json: %s answers no %s", route, a.status)
		}
		var s any = map[string]any{"$ref": "#/components/schemas/" + a.schema}
		if a.list {
			s = map[string]any{"type": "array", "items": s}
		}
		ct := a.contentType
		ct = cmp.Or(ct, "application/json")
		resp["content"] = map[string]any{ct: map[string]any{"schema": s}}
	}
	return json.MarshalIndent(doc, "", "  ")
}
