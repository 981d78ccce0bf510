package strategy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/schema"
)

func TestDecideEscalate(t *testing.T) {
	mem := &schema.Escalate{OnExitCodes: []int{137}, Memory: 2, MaxMemory: "64"}
	ladder := &schema.Escalate{OnExitCodes: []int{137}, Accelerators: []string{"L4:1", "A100:1", "H100:2"}}
	both := &schema.Escalate{OnExitCodes: []int{137, 139}, Memory: 2, MaxMemory: "64", CPUs: 1.5, MaxCPUs: "8",
		Accelerators: []string{"L4:1", "A100:1"}}
	tests := []struct {
		name     string
		policy   Policy
		counters Counters
		ended    Ended
		want     Decision
	}{
		{
			name:   "a listed code escalates memory, as a restart on error",
			policy: Policy{MaxRestartsOnErrors: 3, Escalate: mem},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{Memory: "16+"}},
			want: Decision{Action: Escalate, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleEscalated,
				Size: &Size{Memory: "32+"}, Reason: "exit code 137: memory 16 → 32 GB; restart 1/3 on errors"},
		},
		{
			name:     "the last step stops at the cap",
			policy:   Policy{MaxRestartsOnErrors: 3, Escalate: mem},
			counters: Counters{RestartsOnErrors: 1},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{Memory: "48"}},
			want: Decision{Action: Escalate, Counters: Counters{RestartsOnErrors: 2}, Rule: RuleEscalated,
				Size: &Size{Memory: "64"}, Reason: "exit code 137: memory 48 → 64 GB; restart 2/3 on errors"},
		},
		{
			name:     "at the cap nothing is bigger: FAILED, even with restarts left",
			policy:   Policy{MaxRestartsOnErrors: 5, Escalate: mem},
			counters: Counters{RestartsOnErrors: 2},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{Memory: "64+"}},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 3}, Status: lifecycle.Failed, Rule: RuleNothingBigger,
				Reason: "exit code 137 matched escalate.on_exit_codes [137], but nothing bigger is left (memory 64 GB is max_memory)"},
		},
		{
			name:     "no restarts left: FAILED, saying what the escalation would have been",
			policy:   Policy{MaxRestartsOnErrors: 1, Escalate: mem},
			counters: Counters{RestartsOnErrors: 1},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{Memory: "16"}},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 2}, Status: lifecycle.Failed, Rule: RuleNoRestartsLeft,
				Reason: "exit code 137 (would escalate: memory 16 → 32 GB); no restarts left (max_restarts_on_errors 1)"},
		},
		{
			name:   "escalate wins over recover_on_exit_codes for a code in both",
			policy: Policy{MaxRestartsOnErrors: 1, RecoverOnExitCodes: []int{137}, Escalate: mem},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{Memory: "16"}},
			want: Decision{Action: Escalate, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleEscalated,
				Size: &Size{Memory: "32"}, Reason: "exit code 137: memory 16 → 32 GB; restart 1/1 on errors"},
		},
		{
			name:   "... and at the top it ends the job rather than restart at the same size",
			policy: Policy{MaxRestartsOnErrors: 1, RecoverOnExitCodes: []int{137}, Escalate: mem},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{Memory: "64"}},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed, Rule: RuleNothingBigger,
				Reason: "exit code 137 matched escalate.on_exit_codes [137], but nothing bigger is left (memory 64 GB is max_memory)"},
		},
		{
			name:   "an unlisted code takes the other rules",
			policy: Policy{MaxRestartsOnErrors: 1, RecoverOnExitCodes: []int{29}, Escalate: mem},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(29), Size: Size{Memory: "16"}},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 1}, Rule: RuleExitCodeMatched,
				Reason: "exit code 29 matched recover_on_exit_codes [29]"},
		},
		{
			name:   "any node's code escalates; a setup failure too",
			policy: Policy{MaxRestartsOnErrors: 2, Escalate: both},
			ended:  Ended{Outcome: SetupFailure, ExitCodes: codes(0, 139), Size: Size{CPUs: "3", Memory: "16"}},
			want: Decision{Action: Escalate, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleEscalated,
				Size:   &Size{CPUs: "5", Memory: "32", Accelerators: map[string]int{"L4": 1}},
				Reason: "setup exit code 139 on node 1: memory 16 → 32 GB, cpus 3 → 5, accelerators none → L4:1; restart 1/2 on errors"},
		},
		{
			name:   "a dimension at its cap stays while another grows",
			policy: Policy{MaxRestartsOnErrors: 2, Escalate: both},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{CPUs: "8", Memory: "64", Accelerators: map[string]int{"L4": 1}}},
			want: Decision{Action: Escalate, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleEscalated,
				Size:   &Size{CPUs: "8", Memory: "64", Accelerators: map[string]int{"A100": 1}},
				Reason: "exit code 137: accelerators L4:1 → A100:1; restart 1/2 on errors"},
		},
		{
			name:   "the top of everything: setup ends FAILED_SETUP",
			policy: Policy{MaxRestartsOnErrors: 2, Escalate: both},
			ended:  Ended{Outcome: SetupFailure, ExitCodes: codes(137), Size: Size{CPUs: "8", Memory: "64", Accelerators: map[string]int{"A100": 1}}},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.FailedSetup, Rule: RuleNothingBigger,
				Reason: "setup exit code 137 matched escalate.on_exit_codes [137, 139], but nothing bigger is left (memory 64 GB is max_memory, cpus 8 is max_cpus, accelerators A100:1 is the last of escalate.accelerators)"},
		},
		{
			name:   "the ladder climbs one rung",
			policy: Policy{MaxRestartsOnErrors: 2, Escalate: ladder},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{Accelerators: map[string]int{"A100": 1}}},
			want: Decision{Action: Escalate, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleEscalated,
				Size: &Size{Accelerators: map[string]int{"H100": 2}}, Reason: "exit code 137: accelerators A100:1 → H100:2; restart 1/2 on errors"},
		},
		{
			name:   "without escalate a code takes the ordinary rules",
			policy: Policy{MaxRestartsOnErrors: 0},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(137), Size: Size{Memory: "16"}},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed, Rule: RuleNoRestartsLeft,
				Reason: "exit code 137; no restarts left (max_restarts_on_errors 0)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.policy, tc.counters, tc.ended, true)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSizeOfAndResize(t *testing.T) {
	e := &schema.Escalate{OnExitCodes: []int{137}, Memory: 2, Accelerators: []string{"L4:1", "A100:1"}}
	r := schema.Resources{CPUs: "4", Memory: "16+", Accelerators: map[string]int{"L4": 1},
		AnyOf: []schema.Resources{{Region: "r1", Memory: "20"}, {Region: "r2", CPUs: "2"}}}
	if diff := cmp.Diff(Size{Memory: "16+", Accelerators: map[string]int{"L4": 1}}, SizeOf(r, e)); diff != "" {
		t.Errorf("SizeOf (-want +got):\n%s", diff)
	}
	if got := SizeOf(r, nil); !got.IsZero() {
		t.Errorf("SizeOf without escalate = %+v, want zero", got)
	}
	got := Resize(r, Size{Memory: "32+", Accelerators: map[string]int{"A100": 1}})
	want := schema.Resources{CPUs: "4", Memory: "32+", Accelerators: map[string]int{"A100": 1},
		AnyOf: []schema.Resources{{Region: "r1"}, {Region: "r2", CPUs: "2"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Resize (-want +got):\n%s", diff)
	}
	if r.AnyOf[0].Memory != "20" || r.Memory != "16+" {
		t.Errorf("Resize changed its input: %+v", r)
	}
	// The candidates inherit the escalated size once placed.
	cands, err := Candidates(got, func(x schema.Resources) ([]schema.Placement, error) {
		return []schema.Placement{{Cloud: "local", Region: x.Region, Zone: x.Region + "-a"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		if c.Resources.Memory != "32+" || c.Resources.Accelerators["A100"] != 1 {
			t.Errorf("candidate %s asks for memory %q, accelerators %v; want the escalated size", c.Placement, c.Resources.Memory, c.Resources.Accelerators)
		}
	}
}

func TestSizeString(t *testing.T) {
	s := Size{CPUs: "8", Memory: "32+", Accelerators: map[string]int{"A100": 1}}
	if got, want := s.String(), "cpus 8, memory 32 GB, accelerators A100:1"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
