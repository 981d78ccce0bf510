package strategy

import (
	"slices"
)

// PriceOf says what a candidate costs per node-hour now, as the controller
// last read it (spot prices per zone for a spot candidate); known is false
// when no price of it is known.
type PriceOf func(Candidate) (perHour float64, known bool)

// Cheapest orders the candidates by price, cheapest first
// (resources.placement: cheapest). Candidates of equal price keep their
// order, and those whose price is not known go last, in their own order:
// a candidate is never dropped for want of a price. The input is never
// modified.
func Cheapest(cands []Candidate, price PriceOf) []Candidate {
	type priced struct {
		c     Candidate
		price float64
		known bool
	}
	ps := make([]priced, len(cands))
	for i, c := range cands {
		p, ok := price(c)
		ps[i] = priced{c, p, ok}
	}
	slices.SortStableFunc(ps, func(a, b priced) int {
		switch {
		case a.known != b.known:
			if a.known {
				return -1
			}
			return 1
		case !a.known || a.price == b.price:
			return 0
		case a.price < b.price:
			return -1
		}
		return 1
	})
	out := make([]Candidate, len(ps))
	for i, p := range ps {
		out[i] = p.c
	}
	return out
}
