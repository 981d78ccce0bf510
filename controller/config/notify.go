package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"sortie/schema"
)

// NotifyConfig is the notify: section: the webhooks of tasks that name
// none, and the keys that sign what is posted.
type NotifyConfig struct {
	// Webhooks receive the events of every job whose current task has no
	// notify of its own.
	Webhooks []schema.Webhook `json:"webhooks"`
	// Secrets maps a key's name, which a webhook's secret gives, to the key
	// that signs each body (HMAC-SHA256). They live here only: never in a
	// task file, the store or an error message.
	Secrets map[string]string `json:"secrets"`
}

// minSecretLen is the shortest signing key accepted: a key anyone could
// guess signs nothing.
const minSecretLen = 16

// notifyProblems checks the notify section: each default webhook as a
// task's are checked, that every secret it names is given, and that every
// key is long enough. Keys are never shown.
func (cfg *Config) notifyProblems(lines map[string]int) []schema.Problem {
	var out []schema.Problem
	n := cfg.Notify
	for i, w := range n.Webhooks {
		base := fmt.Sprintf("notify.webhooks[%d]", i)
		for _, p := range schema.CheckWebhook(w) {
			p.Path = base + "." + p.Path
			p.Line = lineOf(lines, p.Path, base)
			out = append(out, p)
		}
		if w.Secret != "" {
			if _, ok := n.Secrets[w.Secret]; !ok {
				out = append(out, schema.Problem{Line: lineOf(lines, base+".secret", base), Path: base + ".secret",
					Message: fmt.Sprintf("%q names no key; add notify.secrets.%s (%d characters or more), or remove secret to send unsigned", w.Secret, w.Secret, minSecretLen)})
			}
		}
	}
	names := slices.Sorted(maps.Keys(n.Secrets))
	for _, k := range names {
		if len(n.Secrets[k]) < minSecretLen {
			key := "notify.secrets." + k
			out = append(out, schema.Problem{Line: lines[key], Path: key,
				Message: fmt.Sprintf("is shorter than %d characters; give a long random key, e.g. the output of: openssl rand -hex 32", minSecretLen)})
		}
	}
	return out
}

// lineOf is the line of key in config.yaml, else of the item it is in.
func lineOf(lines map[string]int, key, item string) int {
	if l := lines[key]; l > 0 {
		return l
	}
	return lines[item]
}

// ByteSize is a number of bytes, written as a whole number or with a unit:
// 1GiB, 512MiB, 500MB, 64KiB.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseByteSize reads "1GiB", "500MB" or "1073741824".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(v), u.n
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a size; write bytes or a size such as 512MiB or 1GiB", s)
	}
	return ByteSize(n * mult), nil
}

// String writes b with the largest binary unit that divides it.
func (b ByteSize) String() string {
	for _, u := range []struct {
		s string
		n int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b > 0 && int64(b)%u.n == 0 {
			return fmt.Sprintf("%d%s", int64(b)/u.n, u.s)
		}
	}
	return fmt.Sprintf("%dB", int64(b))
}
