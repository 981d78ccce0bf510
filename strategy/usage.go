package strategy

import (
	"slices"
)

// UserUsage is one user's row of `sortie server usage`: what their jobs
// hold now against their own limit, their fair-share weight, their
// decayed use and its share of everyone's, and how many jobs they have
// waiting.
type UserUsage struct {
	User string
	// Held is what the user's admitted, unfinished jobs hold.
	Held Amounts
	// Limit is the user's own limit (theirs, else the default); nil for
	// none.
	Limit Amounts
	// Weight is the user's fair-share weight (1 unless configured).
	Weight float64
	// Use is the user's decayed use, in charge-seconds (DecayedUse).
	Use float64
	// Share is Use over every user's decayed use, 0 to 1; 0 when no one
	// has any.
	Share float64
	// Waiting is how many of the user's jobs wait to be admitted.
	Waiting int
}

// Usage builds the rows of `sortie server usage` from admission's facts:
// one per user with a job that holds something or waits, by user name.
// Use is decayed at in.Now with in.HalfLife, as Admit orders by; Share
// counts the use of every user, also of those with nothing running or
// waiting now.
func Usage(in AdmitInput) []UserUsage {
	use := DecayedUse(in.Used, in.Now, in.HalfLife)
	total := 0.0
	for _, u := range use {
		total += u
	}
	waiting := map[string]int{}
	for _, w := range in.Waiting {
		waiting[w.User]++
	}
	users := map[string]bool{}
	for u, held := range in.Held {
		for _, n := range held {
			if n > 0 {
				users[u] = true
			}
		}
	}
	for u := range waiting {
		users[u] = true
	}
	out := make([]UserUsage, 0, len(users))
	for u := range users {
		row := UserUsage{User: u, Held: Amounts{}, Limit: in.Limits.UserLimit(u), Weight: in.Weights[u], Use: use[u], Waiting: waiting[u]}
		for r, n := range in.Held[u] {
			if n > 0 {
				row.Held[r] = n
			}
		}
		if row.Weight <= 0 {
			row.Weight = 1
		}
		if total > 0 {
			row.Share = use[u] / total
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b UserUsage) int {
		switch {
		case a.User < b.User:
			return -1
		case a.User > b.User:
			return 1
		}
		return 0
	})
	return out
}
