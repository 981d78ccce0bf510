package service

import (
	"fmt"
	"time"
)

// Age says how long d is the one way sortie shows it, in messages and
// tables: "1 second", "5 minutes", "3 hours" (under two days), "4 days".
func Age(d time.Duration) string {
	n, unit := int(d.Hours()/24), "day"
	switch {
	case d < time.Minute:
		n, unit = int(d.Seconds()), "second"
	case d < time.Hour:
		n, unit = int(d.Minutes()), "minute"
	case d < 48*time.Hour:
		n, unit = int(d.Hours()), "hour"
	}
	if n < 0 {
		n = 0
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%d %s", n, unit)
}
