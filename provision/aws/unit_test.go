package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"sortie/provision"
	"sortie/schema"
)

type failingCredentials struct{}

func (failingCredentials) Retrieve(context.Context) (awssdk.Credentials, error) {
	return awssdk.Credentials{}, errors.New("no EC2 IMDS role found")
}

func TestClassify(t *testing.T) {
	api := func(code string) error {
		return fmt.Errorf("launch x: %w", &smithy.OperationError{ServiceID: "EC2", OperationName: "RunInstances",
			Err: &smithy.GenericAPIError{Code: code, Message: "m"}})
	}
	tests := []struct {
		err  error
		want provision.ErrorClass
	}{
		{api("InsufficientInstanceCapacity"), provision.ClassCapacity},
		{api("InstanceLimitExceeded"), provision.ClassCapacity},
		{api("capacity-not-available"), provision.ClassCapacity},
		{api("MaxSpotInstanceCountExceeded"), provision.ClassCapacity},
		{api("SpotMaxPriceTooLow"), provision.ClassCapacity},
		{api("Unsupported"), provision.ClassCapacity},
		{api("VcpuLimitExceeded"), provision.ClassCapacity},
		{api("AuthFailure"), provision.ClassPrechecks},
		{api("UnauthorizedOperation"), provision.ClassPrechecks},
		{api("InvalidAMIID.NotFound"), provision.ClassPrechecks},
		{api("InvalidAMIID.Malformed"), provision.ClassPrechecks},
		{api("InvalidParameterValue"), provision.ClassPrechecks},
		{api("InvalidParameterCombination"), provision.ClassPrechecks},
		{api("InvalidInstanceType"), provision.ClassPrechecks},
		{api("OptInRequired"), provision.ClassPrechecks},
		{api("RequestLimitExceeded"), provision.ClassTransient},
		{api("InternalError"), provision.ClassTransient},
		{fmt.Errorf("sign: %w", &v4.SigningError{Err: errors.New("failed to retrieve credentials")}), provision.ClassPrechecks},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), provision.ClassTransient},
		{errors.New("connection refused"), provision.ClassTransient},
		{provision.Capacity(errors.New("already classified")), provision.ClassCapacity},
	}
	for _, tt := range tests {
		got := classify(tt.err)
		if c := provision.Classify(got); c != tt.want {
			t.Errorf("classify(%v) = %s, want %s", tt.err, c, tt.want)
		}
		if !errors.Is(got, tt.err) && !errors.Is(tt.err, got) {
			t.Errorf("classify(%v) lost the original error", tt.err)
		}
	}
	if classify(nil) != nil {
		t.Error("classify(nil) != nil")
	}
}

func TestNodeState(t *testing.T) {
	tests := []struct {
		state types.InstanceStateName
		code  string
		want  provision.NodeState
	}{
		{types.InstanceStateNamePending, "", provision.NodePending},
		{types.InstanceStateNameRunning, "", provision.NodeRunning},
		{types.InstanceStateNameTerminated, ReasonSpotTermination, provision.NodePreempted},
		{types.InstanceStateNameShuttingDown, ReasonSpotTermination, provision.NodePreempted},
		// A launch EC2 failed is not a preemption, nor is a Server.* code
		// sortie does not know.
		{types.InstanceStateNameTerminated, ReasonServerInternalError, provision.NodeGone},
		{types.InstanceStateNameTerminated, ReasonInsufficientCapacity, provision.NodeGone},
		{types.InstanceStateNameTerminated, "Server.SomethingNew", provision.NodeGone},
		{types.InstanceStateNameStopped, "Server.SomethingNew", provision.NodeStopped},
		{types.InstanceStateNameStopped, ReasonScheduledStop, provision.NodePreempted},
		{types.InstanceStateNameStopped, ReasonUserHibernate, provision.NodeStopped},
		{types.InstanceStateNameTerminated, ReasonUserShutdown, provision.NodeTerminated},
		{types.InstanceStateNameTerminated, "Client.InstanceInitiatedShutdown", provision.NodeGone},
		{types.InstanceStateNameTerminated, "", provision.NodeGone},
		{types.InstanceStateNameStopped, ReasonSpotShutdown, provision.NodePreempted},
		{types.InstanceStateNameStopped, ReasonUserShutdown, provision.NodeStopped},
		{types.InstanceStateNameStopping, "Server.ScheduledStop", provision.NodePreempted},
		{types.InstanceStateNameStopped, "Client.InstanceInitiatedShutdown", provision.NodeStopped},
		{"", "", provision.NodeGone},
	}
	for _, tt := range tests {
		if got := nodeState(tt.state, tt.code); got != tt.want {
			t.Errorf("nodeState(%s, %q) = %s, want %s", tt.state, tt.code, got, tt.want)
		}
	}
}

// A node that ends while its cluster starts fails the launch: as a
// capacity error (the next placement is tried) when EC2 took it back or
// had no room for it, as a plain error otherwise.
func TestAllRunningTellsCapacityFromOtherEnds(t *testing.T) {
	for _, tt := range []struct {
		state    provision.NodeState
		code     string
		capacity bool
	}{
		{provision.NodePreempted, ReasonSpotTermination, true},
		{provision.NodeGone, ReasonInsufficientCapacity, true},
		{provision.NodeGone, ReasonServerInternalError, true},
		{provision.NodeGone, ReasonInstanceShutdown, false},
		{provision.NodeTerminated, ReasonUserShutdown, false},
		{provision.NodeGone, "", false},
	} {
		c := &provision.Cluster{Nodes: []provision.Node{{Rank: 0, State: provision.NodeRunning}, {Rank: 1, State: tt.state, Reason: tt.code}}}
		ok, err := allRunning(c, 2)
		var perr *provision.Error
		isCapacity := errors.As(err, &perr) && perr.Class == provision.ClassCapacity
		if ok || err == nil || isCapacity != tt.capacity {
			t.Errorf("%s %q: allRunning = %t, %v (capacity %t), want capacity %t", tt.state, tt.code, ok, err, isCapacity, tt.capacity)
		}
	}
}

// Every code the table names reads as its row says, stopped and
// terminated; only the spot and retirement codes are preemptions.
func TestStateReasonsPreemptOnlyForTheCloudsOwnTakeBacks(t *testing.T) {
	preempts := []string{ReasonSpotTermination, ReasonSpotShutdown, ReasonScheduledStop}
	for code, r := range stateReasons {
		want := slices.Contains(preempts, code)
		for _, st := range []types.InstanceStateName{types.InstanceStateNameStopped, types.InstanceStateNameTerminated} {
			got := nodeState(st, code)
			if (got == provision.NodePreempted) != want {
				t.Errorf("nodeState(%s, %s) = %s; the table says %+v", st, code, got, r)
			}
		}
		if r.why == "" {
			t.Errorf("%s has no reason for a person", code)
		}
	}
}

func fakeType(name string, cpus int32, memMiB int64, gpu string, gpuCount int32) types.InstanceTypeInfo {
	t := types.InstanceTypeInfo{
		InstanceType:          types.InstanceType(name),
		CurrentGeneration:     awssdk.Bool(true),
		BareMetal:             awssdk.Bool(false),
		SupportedUsageClasses: []types.UsageClassType{types.UsageClassTypeOnDemand, types.UsageClassTypeSpot},
		ProcessorInfo:         &types.ProcessorInfo{SupportedArchitectures: []types.ArchitectureType{types.ArchitectureTypeX8664}},
		VCpuInfo:              &types.VCpuInfo{DefaultVCpus: awssdk.Int32(cpus)},
		MemoryInfo:            &types.MemoryInfo{SizeInMiB: awssdk.Int64(memMiB)},
	}
	if gpu != "" {
		t.GpuInfo = &types.GpuInfo{Gpus: []types.GpuDeviceInfo{{Name: awssdk.String(gpu), Count: awssdk.Int32(gpuCount)}}}
	}
	return t
}

func TestSmallestType(t *testing.T) {
	arm := fakeType("a1.large", 2, 4096, "", 0)
	arm.ProcessorInfo.SupportedArchitectures = []types.ArchitectureType{types.ArchitectureTypeArm64}
	old := fakeType("m4.large", 2, 8192, "", 0)
	old.CurrentGeneration = awssdk.Bool(false)
	noSpot := fakeType("x1.large", 2, 16384, "", 0)
	noSpot.SupportedUsageClasses = []types.UsageClassType{types.UsageClassTypeOnDemand}
	all := []types.InstanceTypeInfo{
		fakeType("m6i.xlarge", 4, 16384, "", 0),
		fakeType("m6i.large", 2, 8192, "", 0),
		fakeType("c6i.large", 2, 4096, "", 0),
		fakeType("t3.micro", 2, 1024, "", 0),
		fakeType("g6f.large", 2, 8192, "L4", 1),
		fakeType("p4d.24xlarge", 96, 1179648, "A100", 8),
		fakeType("g5.xlarge", 4, 16384, "A10G", 1),
		fakeType("g5.12xlarge", 48, 196608, "A10G", 4),
		fakeType("m6a.large", 2, 8192, "", 0),
		arm, old, noSpot,
	}
	tests := []struct {
		r    schema.Resources
		want string
	}{
		{schema.Resources{}, "m6a.large"}, // the default 2+ CPUs, 8+ GB; ties go by name
		{schema.Resources{CPUs: "2"}, "t3.micro"},
		{schema.Resources{CPUs: "2+", Memory: "4"}, "c6i.large"},
		{schema.Resources{CPUs: "3+"}, "m6i.xlarge"},
		{schema.Resources{Memory: "16+", UseSpot: true}, "m6i.xlarge"},
		{schema.Resources{Memory: "16", CPUs: "2"}, "x1.large"},
		{schema.Resources{Memory: "16", CPUs: "2", UseSpot: true}, ""}, // x1.large is on-demand only
		{schema.Resources{Accelerators: map[string]int{"A10G": 1}}, "g5.xlarge"},
		{schema.Resources{Accelerators: map[string]int{"a10g": 2}}, "g5.12xlarge"},
		{schema.Resources{Accelerators: map[string]int{"A100": 8, "H100": 8}}, "p4d.24xlarge"},
		{schema.Resources{Accelerators: map[string]int{"H100": 1}}, ""},
		{schema.Resources{CPUs: "1000+"}, ""},
	}
	for _, tt := range tests {
		got, ok, err := smallestType(all, tt.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.InstanceType) != tt.want || ok != (tt.want != "") {
			t.Errorf("smallestType(%+v) = %q, %v; want %q", tt.r, got.InstanceType, ok, tt.want)
		}
	}
}

func TestPreferredUbuntu(t *testing.T) {
	img := func(name, date string) types.Image {
		return types.Image{Name: awssdk.String(name), CreationDate: awssdk.String(date)}
	}
	got, ok := preferredUbuntu([]types.Image{
		img("ubuntu/images/hvm-ssd/ubuntu-plucky-25.04-amd64-server-20250601", "2025-06-01"),
		img("ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250101", "2025-01-01"),
		img("ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250301", "2025-03-01"),
		img("ubuntu/images/hvm-ssd/ubuntu-focal-20.04-amd64-server-20250401", "2025-04-01"),
	})
	if !ok || *got.Name != "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20250301" {
		t.Errorf("preferred %v, want the newest jammy", awssdk.ToString(got.Name))
	}
	got, ok = preferredUbuntu([]types.Image{img("ubuntu-xenial-16.04-a", "2017"), img("ubuntu-trusty-14.04-b", "2017")})
	if !ok || *got.Name != "ubuntu-xenial-16.04-a" {
		t.Errorf("without an LTS it knows: %v", awssdk.ToString(got.Name))
	}
	if _, ok := preferredUbuntu(nil); ok {
		t.Error("no images: ok")
	}
}
