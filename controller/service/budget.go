package service

import (
	"context"
	"fmt"

	"sortie/controller/contract"
	"sortie/controller/store"
)

// MonthlyBudget is owner's monthly budget in dollars: their own (`sortie
// server users budget`), else config.yaml's budgets.monthly; nil is none.
func MonthlyBudget(ctx context.Context, st *store.Store, defaultBudget *float64, owner string) (*float64, error) {
	b, ok, err := st.UserBudget(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("read %s's budget: %w", owner, err)
	}
	if ok {
		return b.Monthly, nil
	}
	return defaultBudget, nil
}

// checkBudget refuses a launch (or a retry, which launches a job too) by
// owner once what their jobs cost this calendar month (UTC) has reached
// their monthly budget. A job with no owner has no budget.
func (s *Service) checkBudget(ctx context.Context, owner string) error {
	if owner == "" {
		return nil
	}
	limit, err := MonthlyBudget(ctx, s.Store, s.Config.Budgets.Monthly, owner)
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
