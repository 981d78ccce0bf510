package contract

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"sortie/schema"
)

// An answer's JSON schema is made from its Go type: each exported field
// is a property named by its json tag, required unless the tag says
// omitempty, of the JSON type of the Go one. A pointer may be null, and
// so may a list or map whose field is tagged `schema:"nullable"` (one
// the service can leave nil); any other list is always a list. Times are
// RFC 3339 strings (format date-time). Each property's description is
// fieldDocs' entry for it: a field without one is an error, as is an
// entry for no field.

// Object is one answer's schema: its name in the OpenAPI document's
// components, and the Go type it is made from.
type Object struct {
	Name string
	Type reflect.Type
	Doc  string
}

// Objects are the answers of the API and of `-o json`, each with its schema.
var Objects = []Object{
	{"job", typeOf[JobView](), "A job: an item of `jobs queue -o json` and of GET /v1/jobs, and of `show`'s chain."},
	{"show", typeOf[JobDetail](), "`jobs show ID -o json` and GET /v1/jobs/{id}: a job with these fields added."},
	{"size", typeOf[SizeView](), "A size `job_recovery.escalate` chose: each dimension it grows."},
	{"override", typeOf[Override](), "One `--set` of a manual retry."},
	{"task", typeOf[TaskView](), "One task of a job."},
	{"task_ref", typeOf[TaskRef](), "One task of one job."},
	{"attempt", typeOf[AttemptView](), "One attempt of a task."},
	{"notice", typeOf[NoticeView](), "A preemption notice."},
	{"checkpoint", typeOf[CheckpointView](), "The newest object of a task's `MOUNT_CACHED` buckets when an attempt ended: its last saved state."},
	{"launch_try", typeOf[LaunchTryView](), "One failed launch try."},
	{"notification", typeOf[NotificationView](), "One event of a job posted to one webhook."},
	{"storage", typeOf[StorageView](), "What one node's syncs of one bucket did in an attempt."},
	{"plan", typeOf[Plan](), "`jobs launch --dry-run -o json`: what the launch would store and where it would run, found without storing or starting anything."},
	{"plan_task", typeOf[TaskPlan](), "One task of a plan."},
	{"escalate_plan", typeOf[EscalatePlan](), "A task's `job_recovery.escalate`, as the file gives it."},
	{"placement", typeOf[PlacementPlan](), "One candidate placement and what would be asked there."},
	{"repo", typeOf[RepoPlan](), "A git repository at a ref."},
	{"mount", typeOf[MountPlan](), "One local file_mounts entry."},
	{"failure", typeOf[FailureView](), "A known failure: an item of `jobs failures -o json` and of GET /v1/failures."},
	{"evidence", typeOf[EvidenceView](), "One of the two attempts a failure's verdict rests on (`job_recovery.confirm_failures`)."},
	{"flaky_count", typeOf[FlakyCount](), "How often a job's inputs were found flaky: `jobs show` prints \"flaky 3 of 4 runs\"."},
	{"release", typeOf[ReleaseView](), "What `jobs release` did: `jobs release -o json` and POST /v1/jobs/{id}/release."},
	{"priority", typeOf[PriorityView](), "What `jobs priority` did: `jobs priority -o json` and POST /v1/jobs/{id}/priority."},
	{"usage", typeOf[UsageView](), "One user's row of `sortie server usage -o json`: what their jobs hold against the limits, and their fair share."},
	{"quota", typeOf[QuotaView](), "A limit in effect and where it comes from: an item of `sortie server quotas -o json` and of GET /v1/quotas, and what `quotas set` and `quotas unset` leave."},
	{"usage_amounts", typeOf[UsageAmounts](), "Counts of what a limit counts; in a limit, a `null` count is no limit."},
	{"retry_result", typeOf[RetryResult](), "A retried job and its new retry: an item of `jobs retry -o json`."},
	{"replica", typeOf[ReplicaView](), "One replica of the controller sharing the store: an item of `sortie replicas status -o json`."},
	{"me", typeOf[Asker](), "GET /v1/me: the user a token names."},
	{"launch_result", typeOf[LaunchResult](), "POST /v1/jobs: the job, and the warnings the CLI prints."},
	{"retry_results", typeOf[RetryResults](), "POST /v1/jobs/retry: the retries, and the warnings the CLI prints."},
	{"cancelled", typeOf[Cancelled](), "A cancel's answer: the ids marked."},
	{"forgotten", typeOf[Forgotten](), "A forget's answer: the key, or how many."},
	{"quarantine", typeOf[QuarantineView](), "A quarantined placement, tried last by launches: an item of `sortie quarantine list -o json` and of GET /v1/quarantine."},
	{"quarantine_cleared", typeOf[QuarantineCleared](), "`sortie quarantine clear -o json` and DELETE /v1/quarantine/...: the clear recorded."},
	{"price", typeOf[PriceView](), "A price sortie charges per node-hour, and where it came from: an item of `sortie prices -o json` and of GET /v1/prices."},
	{"prices_refreshed", typeOf[PricesRefreshed](), "`sortie prices refresh -o json` and POST /v1/prices/refresh: what each cloud answered."},
	{"prices_refreshed_cloud", typeOf[PricesRefreshedCloud](), "One cloud's part of a price refresh."},
	{"blob", typeOf[BlobResult](), "PUT /v1/blobs/{sha256}: the upload stored."},
	{"log_event", typeOf[LogEvent](), "One line of GET /v1/jobs/{id}/logs (application/x-ndjson)."},
	{"log_end", typeOf[LogEnd](), "The end of a log stream."},
	{"error_detail", typeOf[ErrorDetail](), "What went wrong: a code a program can test, the message a person reads, and what the code needs besides."},
	{"problem", typeOf[schema.Problem](), "One problem of a task."},
	{"budget_detail", typeOf[BudgetDetail](), "The monthly budget that refused a launch (`budget_spent`)."},
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// Schemas are the JSON schemas of Objects, by name, as the OpenAPI
// document's components hold them.
func Schemas() (map[string]any, error) { return SchemasOf(Objects, fieldDocs) }

// SchemasOf makes the schemas of objs, documenting each field from docs
// (object name, then field name, to its description).
func SchemasOf(objs []Object, docs map[string]map[string]string) (map[string]any, error) {
	names := map[reflect.Type]string{}
	for _, o := range objs {
		names[o.Type] = o.Name
	}
	var errs []string
	out := map[string]any{}
	for _, o := range objs {
		g := &gen{names: names, docs: docs, object: o.Name, used: map[string]bool{}}
		s := g.object_(o.Type)
		s["description"] = o.Doc
		out[o.Name] = s
		errs = append(errs, g.errs...)
		for f := range docs[o.Name] {
			if !g.used[f] {
				errs = append(errs, fmt.Sprintf("%s.%s: documented, but %s has no such field", o.Name, f, o.Type))
			}
		}
	}
	for name := range docs {
		if _, ok := out[name]; !ok {
			errs = append(errs, fmt.Sprintf("%s: documented, but no object has that name", name))
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("JSON schemas: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

type gen struct {
	names  map[reflect.Type]string
	docs   map[string]map[string]string
	object string
	used   map[string]bool
	errs   []string
}

func (g *gen) fail(format string, args ...any) {
	g.errs = append(g.errs, g.object+"."+fmt.Sprintf(format, args...))
}

// object_ is a struct's schema: its fields, those of embedded structs
// among them, as encoding/json writes them.
func (g *gen) object_(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	g.fields(t, g.object, props, &required)
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// fields adds t's fields, documented under object's entry of the docs
// (an embedded object's fields under its own).
func (g *gen) fields(t reflect.Type, object string, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			embedded := object
			if n, ok := g.names[f.Type]; ok {
				embedded = n
			}
			g.fields(f.Type, embedded, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := g.value(f.Type, f.Tag.Get("schema") == "nullable", name)
		doc := g.docs[object][name]
		if doc == "" {
			g.fail("%s: no description (add it to fieldDocs)", name)
		}
		if object == g.object {
			g.used[name] = true
		}
		s["description"] = doc
		props[name] = s
		if !strings.Contains(opts, "omitempty") {
			*required = append(*required, name)
		}
	}
	sort.Strings(*required)
}

// value is the schema of a value of type t; nullable lets a list or map
// be null.
func (g *gen) value(t reflect.Type, nullable bool, field string) map[string]any {
	if t.Kind() == reflect.Pointer {
		return orNull(g.value(t.Elem(), false, field))
	}
	if t == reflect.TypeFor[time.Time]() {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if name, ok := g.names[t]; ok {
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	var s map[string]any
	switch t.Kind() {
	case reflect.String:
		s = map[string]any{"type": "string"}
	case reflect.Bool:
		s = map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s = map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		s = map[string]any{"type": "number"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			s = map[string]any{"type": "string", "contentEncoding": "base64"}
		} else {
			s = map[string]any{"type": "array", "items": g.value(t.Elem(), false, field)}
		}
	case reflect.Map:
		s = map[string]any{"type": "object", "additionalProperties": g.value(t.Elem(), false, field)}
	default:
		g.fail("%s: %s has no JSON schema (a struct needs an entry in Objects)", field, t)
		return map[string]any{}
	}
	if nullable {
		return orNull(s)
	}
	return s
}

// orNull lets s be null too.
func orNull(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok {
		s["type"] = []any{typ, "null"}
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}
