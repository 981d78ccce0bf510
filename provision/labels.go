package provision

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ReservedLabelPrefix starts every tag and label sortie puts on what it
// launches. A user label in that namespace could hide a cluster from
// sortie or make it adopt another's, so it is refused.
const ReservedLabelPrefix = "sortie-"

// CheckLabels refuses labels that clash with sortie's own tags and
// labels, and, through valid, those the cloud forbids; valid returns why
// and a fix, or "" for a label the cloud accepts. Every problem is named,
// keys in order.
func CheckLabels(cloud string, labels map[string]string, reserved []string, valid func(k, v string) (why, fix string)) error {
	keys := slices.Sorted(maps.Keys(labels))
	var problems []string
	for _, k := range keys {
		v := labels[k]
		switch {
		case strings.HasPrefix(strings.ToLower(k), ReservedLabelPrefix):
			problems = append(problems, fmt.Sprintf("resources.labels.%s: the %q prefix is sortie's own (it finds its clusters by those tags); rename the label", k, ReservedLabelPrefix))
			continue
		case containsFold(reserved, k):
			problems = append(problems, fmt.Sprintf("resources.labels.%s: sortie sets %s itself on %s; rename the label", k, k, cloud))
			continue
		}
		if why, fix := valid(k, v); why != "" {
			problems = append(problems, fmt.Sprintf("resources.labels.%s: %q %s on %s; %s", k, v, why, cloud, fix))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return Prechecks(fmt.Errorf("%s", strings.Join(problems, "\n")))
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}
