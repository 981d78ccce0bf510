package strategy

import (
	"math"
	"strconv"
)

// HourlyCost is the resource of what running jobs cost an hour, in
// cents: a limit's hourly_cost, and a job's ask of it (what its
// placement is expected to cost an hour, every node).
const HourlyCost Resource = "hourly_cost_cents"

// Cents is dollars in whole cents, rounded to the nearest; negative and
// non-finite amounts are 0.
func Cents(dollars float64) int {
	if dollars <= 0 || math.IsNaN(dollars) || math.IsInf(dollars, 0) {
		return 0
	}
	return int(math.Round(dollars * 100))
}

// count says n of r as a reason writes the number: "16", or "$38.50" for
// HourlyCost.
func (r Resource) count(n int) string {
	if r == HourlyCost {
		return DollarsOfCents(n)
	}
	return strconv.Itoa(n)
}

// DollarsOfCents writes cents as dollars: "$38.50".
func DollarsOfCents(n int) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	c := strconv.Itoa(n % 100)
	if len(c) == 1 {
		c = "0" + c
	}
	return sign + "$" + strconv.Itoa(n/100) + "." + c
}
