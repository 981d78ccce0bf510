package gcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/protobuf/proto"

	"sortie/provision"
)

func doneOp(code string, httpStatus int32) *computepb.Operation {
	op := &computepb.Operation{
		Name: proto.String("operation-1"), OperationType: proto.String("insert"),
		TargetLink: proto.String("https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instances/sortie-1-0-1-0"),
		Status:     computepb.Operation_DONE.Enum(),
	}
	if code != "" {
		op.Error = &computepb.Error{Errors: []*computepb.Errors{{Code: proto.String(code), Message: proto.String("the message")}}}
	}
	if httpStatus != 0 {
		op.HttpErrorStatusCode = proto.Int32(httpStatus)
		op.HttpErrorMessage = proto.String("SERVICE UNAVAILABLE")
	}
	return op
}

func TestOperationErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status int32
		want   provision.ErrorClass // "" means no error
	}{
		{"", 0, ""},
		{"", 200, ""},
		{"ZONE_RESOURCE_POOL_EXHAUSTED", 0, provision.ClassCapacity},
		{"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", 0, provision.ClassCapacity},
		{"ZONE_RESOURCE_POOL_EXHAUSTED", 503, provision.ClassCapacity},
		{"QUOTA_EXCEEDED", 403, provision.ClassCapacity},
		{"REGION_RESOURCE_POOL_EXHAUSTED", 0, provision.ClassCapacity},
		{"RESOURCE_AVAILABILITY_EXCEEDED", 0, provision.ClassCapacity},
		{"UNSUPPORTED_OPERATION", 400, provision.ClassCapacity},
		{"INVALID_FIELD_VALUE", 0, provision.ClassPrechecks},
		{"RESOURCE_NOT_FOUND", 0, provision.ClassPrechecks},
		{"PERMISSIONS_ERROR", 0, provision.ClassPrechecks},
		{"SOMETHING_NEW", 400, provision.ClassPrechecks},
		{"SOMETHING_NEW", 404, provision.ClassPrechecks},
		{"INTERNAL_ERROR", 500, provision.ClassTransient},
		{"RESOURCE_OPERATION_RATE_EXCEEDED", 0, provision.ClassTransient},
		{"", 503, provision.ClassTransient},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.code, tc.status), func(t *testing.T) {
			err := operationError(doneOp(tc.code, tc.status))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("operationError = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("operationError = nil, want a %s error", tc.want)
			}
			if got := provision.Classify(err); got != tc.want {
				t.Errorf("class %s, want %s (err %v)", got, tc.want, err)
			}
			if tc.code != "" && !strings.Contains(err.Error(), tc.code) {
				t.Errorf("error %q does not name the code %s", err, tc.code)
			}
		})
	}
}

func TestClassifyHTTPErrors(t *testing.T) {
	api := func(code int, reason, msg string) error {
		return fmt.Errorf("insert: %w", &googleapi.Error{Code: code, Message: msg, Errors: []googleapi.ErrorItem{{Reason: reason, Message: msg}}})
	}
	for _, tc := range []struct {
		name string
		err  error
		want provision.ErrorClass
	}{
		{"no credentials", api(401, "authError", "Request had invalid authentication credentials."), provision.ClassPrechecks},
		{"no permission", api(403, "forbidden", "Required 'compute.instances.create' permission"), provision.ClassPrechecks},
		{"api disabled", api(403, "accessNotConfigured", "Compute Engine API has not been used in project"), provision.ClassPrechecks},
		{"cpu quota", api(403, "quotaExceeded", "Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1."), provision.ClassCapacity},
		{"rate limit", api(403, "rateLimitExceeded", "Rate Limit Exceeded"), provision.ClassTransient},
		{"unknown image", api(404, "notFound", "The resource 'projects/x/global/images/nope' was not found"), provision.ClassPrechecks},
		{"unknown machine type", api(400, "invalid", "Invalid value for field 'resource.machineType'"), provision.ClassPrechecks},
		{"not ready", api(400, "resourceNotReady", "The resource is not ready"), provision.ClassTransient},
		{"stockout as HTTP", api(503, "ZONE_RESOURCE_POOL_EXHAUSTED", "The zone does not have enough resources"), provision.ClassCapacity},
		{"server error", api(500, "backendError", "Internal error"), provision.ClassTransient},
		{"conflict", api(409, "alreadyExists", "already exists"), provision.ClassTransient},
		{"no HTTP error", errors.New("connection refused"), provision.ClassTransient},
		{"cancelled", fmt.Errorf("insert: %w", context.Canceled), provision.ClassTransient},
		{"already classified", provision.Capacity(errors.New("x")), provision.ClassCapacity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classify(tc.err)
			if got := provision.Classify(err); got != tc.want {
				t.Errorf("classify(%v) is %s, want %s", tc.err, got, tc.want)
			}
			if !errors.Is(err, tc.err) && err != tc.err {
				t.Errorf("classify lost the original error")
			}
		})
	}
}
