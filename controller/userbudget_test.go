package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/price"
	"sortie/schema"
)

// ownedJob stores a job of owner's.
func ownedJob(t *testing.T, c *Controller, owner, yaml string) int64 {
	t.Helper()
	p, err := schema.Parse([]byte(yaml), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	id, err := c.Store.CreateJob(context.Background(), &store.Job{Name: "j", Spec: b, NumTasks: len(p.Tasks), Owner: owner}, make([]store.NewTask, len(p.Tasks)))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// budgets.when_spent: stop ends the running job of a user whose monthly
// budget is spent, FAILED with why; a user with room goes on; with
// finish, the job goes on.
func TestWhenSpentStop(t *testing.T) {
	for _, when := range []string{"stop", "finish"} {
		t.Run(when, func(t *testing.T) {
			ctx := context.Background()
			c := localControllerWith(t, "budgets:\n  monthly: 5\n  when_spent: "+when+"\n")
			c.Now = time.Now
			// A dollar a second on-demand.
			c.Prices = bookOf{{Cloud: "local", Region: "local"}: 3600}
			for _, u := range []string{"alice", "bob"} {
				if err := c.Store.AddUser(ctx, u, "h-"+u, false); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Store.SetBudget(ctx, "bob", nil, "root"); err != nil {
				t.Fatal(err)
			}
			task := "resources: {cloud: local}\nrun: sleep 300\n"
			alice, bob := ownedJob(t, c, "alice", task), ownedJob(t, c, "bob", task)
			untilRunning(t, c, alice)
			untilRunning(t, c, bob)
			later := time.Now().Add(time.Minute) // $60 spent each
			c.Now = func() time.Time { return later }
			ja, _ := step(t, c, alice)
			jb, _ := step(t, c, bob)
			if when == "finish" {
				if ja.Status != lifecycle.Running {
					t.Fatalf("alice's job %s, want it running on (when_spent: finish)", ja.Status)
				}
			} else {
				if ja.Status != lifecycle.Failed || !strings.HasPrefix(ja.FailureReason, "alice's monthly budget is spent: ~$") ||
					!strings.HasSuffix(ja.FailureReason, " of $5.00 in "+store.MonthStart(later).Format("2006-01")+" (UTC); budgets.when_spent: stop") {
					t.Fatalf("alice's job %s %q, want FAILED at her budget", ja.Status, ja.FailureReason)
				}
			}
			if jb.Status != lifecycle.Running {
				t.Fatalf("bob's job %s, want it running (he has no budget)", jb.Status)
			}
			for _, id := range []int64{alice, bob} {
				c.Store.RequestCancelBy(ctx, []int64{id}, "test")
				step(t, c, id)
			}
		})
	}
}

var _ price.Book = bookOf{}
