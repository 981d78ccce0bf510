package aws

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"sortie/provision"
)

// maxTags is how many tags EC2 lets one resource carry.
const maxTags = 50

// ownTags counts the tags sortie puts on each instance: Name, the
// provision tags and the rank.
const ownTags = 7

// checkLabels refuses resources.labels that EC2 would refuse as tags, or
// that would replace one of sortie's own.
func checkLabels(labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	if n := len(labels); n > maxTags-ownTags {
		return provision.Prechecks(fmt.Errorf("resources.labels: %d labels, and EC2 allows %d tags on an instance of which sortie uses %d; keep at most %d",
			n, maxTags, ownTags, maxTags-ownTags))
	}
	return provision.CheckLabels(CloudName, labels, []string{"Name"}, func(k, v string) (string, string) {
		switch {
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			return "uses the aws: prefix, which AWS keeps for itself", "rename the label"
		case utf8.RuneCountInString(k) > 128:
			return "has a key longer than 128 characters", "shorten the key"
		case utf8.RuneCountInString(v) > 256:
			return "is longer than 256 characters", "shorten the value"
		}
		return "", ""
	})
}
