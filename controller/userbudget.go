package controller

import (
	"context"
	"fmt"
	"time"

	"sortie/controller/config"
	"sortie/controller/store"
)

// ownerSpend is what the controller last found of one owner's monthly
// budget, and when: each job of theirs asks at each tick, the store is
// asked at most once a poll interval.
type ownerSpend struct {
	at     time.Time
	reason string
	over   bool
}

// ownerOverBudget says whether owner's monthly budget is spent and their
// running jobs are to stop (budgets.when_spent: stop), with the reason
// the job ends with. A store that cannot say stops nothing: the budget is
// checked again at the next look.
func (c *Controller) ownerOverBudget(ctx context.Context, owner string) (string, bool) {
	if owner == "" || c.Config.Budgets.WhenSpent != config.WhenSpentStop {
		return "", false
	}
	now := c.Now()
	if v, ok := c.ownerSpend.Load(owner); ok {
		if s := v.(ownerSpend); now.Sub(s.at) < c.Config.Controller.PollInterval.D() && !now.Before(s.at) {
			return s.reason, s.over
		}
	}
	s := ownerSpend{at: now}
	limit, err := c.Store.MonthlyBudget(ctx, owner, c.Config.Budgets.Monthly)
	if err != nil {
		c.Log.Warn("read a user's budget", "owner", owner, "err", err)
		return "", false
	}
	if limit != nil {
		month := store.MonthStart(now)
		spent, err := c.Store.Spent(ctx, owner, month, now)
		if err != nil {
			c.Log.Warn("read what a user spent", "owner", owner, "err", err)
			return "", false
		}
		if sp := spent[owner]; sp.Dollars >= *limit {
			approx := ""
			if sp.Estimate {
				approx = "~"
			}
			s.over = true
			s.reason = fmt.Sprintf("%s's monthly budget is spent: %s$%.2f of $%.2f in %s (UTC); budgets.when_spent: stop",
				owner, approx, sp.Dollars, *limit, month.Format("2006-01"))
		}
	}
	c.ownerSpend.Store(owner, s)
	return s.reason, s.over
}
