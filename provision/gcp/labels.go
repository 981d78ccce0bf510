package gcp

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"sortie/provision"
)

// maxLabels is how many labels Compute Engine lets one VM carry; sortie
// uses ownLabels of them (the provision tags, the rank, the cluster size).
const (
	maxLabels = 64
	ownLabels = 7
)

// checkLabels refuses resources.labels that Compute Engine would refuse,
// or that would replace one of sortie's own: keys start with a lowercase
// letter, keys and values hold lowercase letters, digits, '_' and '-', at
// most 63 characters each.
func checkLabels(labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	if n := len(labels); n > maxLabels-ownLabels {
		return provision.Prechecks(fmt.Errorf("resources.labels: %d labels, and Compute Engine allows %d on a VM of which sortie uses %d; keep at most %d",
			n, maxLabels, ownLabels, maxLabels-ownLabels))
	}
	return provision.CheckLabels(CloudName, labels, nil, func(k, v string) (string, string) {
		first, _ := utf8.DecodeRuneInString(k)
		switch {
		case k == "":
			return "has an empty key", "give the label a name"
		case unicode.IsUpper(first):
			return "has a key that does not start with a lowercase letter", "use " + suggestLabel(k)
		case !unicode.IsLower(first):
			return "has a key that does not start with a lowercase letter", "start the key with one, e.g. " + suggestLabel("l-"+k)
		case !labelChars(k) || utf8.RuneCountInString(k) > 63:
			return "has a key Compute Engine refuses (lowercase letters, digits, '_' and '-', at most 63 characters)", "use " + suggestLabel(k)
		case !labelChars(v) || utf8.RuneCountInString(v) > 63:
			return "is a value Compute Engine refuses (lowercase letters, digits, '_' and '-', at most 63 characters)", "use " + suggestLabel(v)
		}
		return "", ""
	})
}

func labelChars(s string) bool {
	for _, r := range s {
		if !unicode.IsLower(r) && !unicode.IsDigit(r) && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

// suggestLabel is s made acceptable, quoted, for an error's fix.
func suggestLabel(s string) string {
	return fmt.Sprintf("%q", labelValue(s))
}
