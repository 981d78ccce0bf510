package aws

import (
	"context"
	"errors"
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"

	"sortie/provision"
)

// capacityCodes are EC2 error codes that mean "not here, not now": another
// zone or region may well have room, so the controller moves on.
func capacityCodes() map[string]bool {
	return map[string]bool{
		"InsufficientInstanceCapacity":         true,
		"InsufficientHostCapacity":             true,
		"InsufficientReservedInstanceCapacity": true,
		"InsufficientCapacity":                 true,
		"InsufficientCapacityOnHost":           true,
		"InstanceLimitExceeded":                true,
		"VcpuLimitExceeded":                    true,
		"MaxSpotInstanceCountExceeded":         true,
		"SpotMaxPriceTooLow":                   true,
		"capacity-not-available":               true,
		"capacity-oversubscribed":              true,
		"price-too-low":                        true,
		"Unsupported":                          true, // the type is not offered in this zone
		"InsufficientFreeAddressesInSubnet":    true,
		"VolumeLimitExceeded":                  true,
	}
}

// prechecksCodes are EC2 error codes no retry can fix: credentials, rights,
// or a request that cannot be satisfied as written.
func prechecksCodes() map[string]bool {
	return map[string]bool{
		"AuthFailure":                 true,
		"UnauthorizedOperation":       true,
		"InvalidClientTokenId":        true,
		"SignatureDoesNotMatch":       true,
		"IncompleteSignature":         true,
		"MissingAuthenticationToken":  true,
		"ExpiredToken":                true,
		"OptInRequired":               true,
		"PendingVerification":         true,
		"Blocked":                     true,
		"InvalidInstanceType":         true,
		"InvalidParameterValue":       true,
		"InvalidParameter":            true,
		"InvalidParameterCombination": true,
		"MissingParameter":            true,
		"UnknownParameter":            true,
		"InvalidBlockDeviceMapping":   true,
		"UnsupportedOperation":        true,
		"InvalidAvailabilityZone":     true,
	}
}

// prechecksPrefixes catch families such as InvalidAMIID.NotFound and
// InvalidAMIID.Malformed.
func prechecksPrefixes() []string {
	return []string{"InvalidAMIID.", "InvalidParameter", "InvalidKeyPair.Format"}
}

// apiCode is the EC2 error code inside err, or "".
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// classify wraps err as a provision.Capacity or provision.Prechecks error
// when its EC2 code says so; anything else stays transient.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var already *provision.Error
	if errors.As(err, &already) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// The SDK found no credentials, or could not sign with them.
	var signing *v4.SigningError
	if errors.As(err, &signing) {
		return provision.Prechecks(err)
	}
	code := apiCode(err)
	if code == "" {
		return err
	}
	if capacityCodes()[code] {
		return provision.Capacity(err)
	}
	if prechecksCodes()[code] {
		return provision.Prechecks(err)
	}
	for _, p := range prechecksPrefixes() {
		if strings.HasPrefix(code, p) {
			return provision.Prechecks(err)
		}
	}
	return err
}

// noRetry keeps the SDK from retrying errors that another attempt cannot
// fix: a zone without capacity is left at once for the next placement.
func noRetry() retry.IsErrorRetryable {
	return retry.IsErrorRetryableFunc(func(err error) awssdk.Ternary {
		switch provision.Classify(classify(err)) {
		case provision.ClassCapacity, provision.ClassPrechecks:
			return awssdk.FalseTernary
		}
		return awssdk.UnknownTernary
	})
}
