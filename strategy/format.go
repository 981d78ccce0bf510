package strategy

import (
	"strconv"
	"strings"
)

// FormatExitCodes writes per-node exit codes in rank order the one way
// sortie shows them, in reasons, tables and logs: "0", "1,?" (? where a
// node's code is unknown), and "-" when there are none.
func FormatExitCodes(codes []*int) string {
	if len(codes) == 0 {
		return "-"
	}
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = "?"
		if c != nil {
			parts[i] = strconv.Itoa(*c)
		}
	}
	return strings.Join(parts, ",")
}
