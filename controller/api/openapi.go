package api

import _ "embed"

// OpenAPI is the API's OpenAPI 3.1 document, served at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte
