package suite

import (
	"sort"
	"time"
)

// Percentile is the p-th percentile (0-100) of ds by the nearest-rank
// method; zero for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s)) + 0.999999)
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Median is the 50th percentile.
func Median(ds []time.Duration) time.Duration { return Percentile(ds, 50) }

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
