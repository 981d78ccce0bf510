package strategy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/schema"
)

func TestDecideOnDemand(t *testing.T) {
	after3 := Policy{OnDemandAfter: 3}
	byCost := Policy{OnDemandAfterCost: true}
	lost := func(spent, onDemand float64) *LostCost {
		return &LostCost{Spent: spent, Longest: 90 * time.Minute, OnDemand: onDemand}
	}
	tests := []struct {
		name     string
		policy   Policy
		counters Counters
		ended    Ended
		want     Decision
	}{
		{
			name:     "the third preemption recovers on-demand",
			policy:   after3,
			counters: Counters{RecoveryCount: 2, Preemptions: 2},
			ended:    Ended{Outcome: Preempted, Placement: zoneA},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 3, LossRecoveries: 1, Preemptions: 3}, OnDemand: true,
				Rule: RuleOnDemandAfter, Reason: "preemption in local/local-a; 3 preemptions reach on_demand_after 3: recovering on-demand"},
		},
		{
			name:     "the second recovers on spot",
			policy:   after3,
			counters: Counters{RecoveryCount: 1, Preemptions: 1},
			ended:    Ended{Outcome: Preempted, Placement: zoneA},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 2, LossRecoveries: 1, Preemptions: 2},
				Rule: RulePreempted, Reason: "preemption in local/local-a"},
		},
		{
			name:     "an attempt already on-demand is not switched again",
			policy:   after3,
			counters: Counters{RecoveryCount: 3, Preemptions: 3},
			ended:    Ended{Outcome: Preempted, Placement: zoneA, OnDemand: true},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 4, LossRecoveries: 1, Preemptions: 3},
				Rule: RulePreempted, Reason: "preemption in local/local-a"},
		},
		{
			name:     "a lost node never switches",
			policy:   Policy{OnDemandAfter: 1},
			counters: Counters{Preemptions: 5},
			ended:    Ended{Outcome: NodeLost, Placement: zoneA},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, Preemptions: 5},
				Rule: RuleNodeLost, Reason: "node lost in local/local-a"},
		},
		{
			name:     "max_recoveries reached still ends the job",
			policy:   Policy{OnDemandAfter: 1, MaxRecoveries: 1},
			counters: Counters{RecoveryCount: 1, LossRecoveries: 1, Preemptions: 1},
			ended:    Ended{Outcome: Preempted, Placement: zoneA},
			want: Decision{Action: Fail, Status: lifecycle.Failed, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, Preemptions: 1},
				Rule: RuleNoRecoveryLeft, Reason: "preemption in local/local-a; no recoveries left (max_recoveries 1)"},
		},
		{
			name:   "by cost: preemptions that cost more than on-demand switch",
			policy: byCost,
			ended:  Ended{Outcome: Preempted, Placement: zoneA, Lost: lost(1.50, 1.20)},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, Preemptions: 1}, OnDemand: true,
				Rule: RuleOnDemandAfterCost, Reason: "preemption in local/local-a; the spot attempts preempted so far (1) cost $1.50, more than on-demand would have for the longest of them (1h30m0s, $1.20): recovering on-demand"},
		},
		{
			name:   "by cost: estimates say so",
			policy: byCost,
			ended:  Ended{Outcome: Preempted, Placement: zoneA, Lost: &LostCost{Spent: 2, Longest: time.Hour, OnDemand: 1, Estimate: true}},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, Preemptions: 1}, OnDemand: true,
				Rule: RuleOnDemandAfterCost, Reason: "preemption in local/local-a; the spot attempts preempted so far (1) cost ~$2.00, more than on-demand would have for the longest of them (1h0m0s, ~$1.00): recovering on-demand"},
		},
		{
			name:   "by cost: cheaper than on-demand stays on spot",
			policy: byCost,
			ended:  Ended{Outcome: Preempted, Placement: zoneA, Lost: lost(1.20, 1.20)},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, Preemptions: 1},
				Rule: RulePreempted, Reason: "preemption in local/local-a"},
		},
		{
			name:   "by cost: no price known stays on spot",
			policy: byCost,
			ended:  Ended{Outcome: Preempted, Placement: zoneA},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, Preemptions: 1},
				Rule: RulePreempted, Reason: "preemption in local/local-a"},
		},
		{
			name:     "both: the count wins",
			policy:   Policy{OnDemandAfter: 2, OnDemandAfterCost: true},
			counters: Counters{Preemptions: 1},
			ended:    Ended{Outcome: Preempted, Placement: zoneA, Lost: lost(5, 1)},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, Preemptions: 2}, OnDemand: true,
				Rule: RuleOnDemandAfter, Reason: "preemption in local/local-a; 2 preemptions reach on_demand_after 2: recovering on-demand"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.policy, tt.counters, tt.ended, false)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPolicyFromOnDemand(t *testing.T) {
	got := PolicyFrom(schemaRecovery(3, true))
	if got.OnDemandAfter != 3 || !got.OnDemandAfterCost {
		t.Errorf("PolicyFrom: %+v, want on_demand_after 3 and on_demand_after_cost", got)
	}
}

func schemaRecovery(after int, cost bool) schema.JobRecovery {
	return schema.JobRecovery{OnDemandAfter: after, OnDemandAfterCost: cost}
}
