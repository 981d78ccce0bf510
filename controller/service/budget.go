package service

import (
	"context"

	"sortie/controller/contract"
	"sortie/controller/store"
)

// checkBudget refuses a launch (or a retry, which launches a job too) by
// owner once what their jobs cost this calendar month (UTC) has reached
// their monthly budget. A job with no owner has no budget.
func (s *Service) checkBudget(ctx context.Context, owner string) error {
	if owner == "" {
		return nil
	}
	limit, err := s.Store.MonthlyBudget(ctx, owner, s.Config.Budgets.Monthly)
	if err != nil || limit == nil {
		return err
	}
	now := s.Now()
	month := store.MonthStart(now)
	spent, err := s.Store.Spent(ctx, owner, month, now)
	if err != nil {
		return err
	}
	c := spent[owner]
	if c.Dollars < *limit {
		return nil
	}
	return &contract.BudgetError{User: owner, Spent: c.Dollars, Budget: *limit, Estimate: c.Estimate, Month: month.Format("2006-01")}
}
