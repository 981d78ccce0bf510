package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Override is one PATH=VALUE assignment applied to a pipeline, as a diff
// for the record of a manual retry. Old and New are rendered as a user
// would write them ("" when absent); secret values are never shown.
type Override struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// ApplySet returns a copy of p with each "PATH=VALUE" assignment applied in
// order, validated exactly like a task file, and the overrides as a diff.
// p itself is not changed.
//
// PATH is a field path as in error messages: resources.memory, envs.SEED,
// resources.any_of[1].region, resources.job_recovery.recover_on_exit_codes.
// Below envs, secrets, file_mounts and accelerators the rest of the path is
// one key, dots included (file_mounts./data/x.csv=./x.csv). In a pipeline
// of one task the path is relative to that task (a "tasks[0]." prefix is
// allowed); in a pipeline of several, every task field needs the prefix
// "tasks[N]." and a bare "name" names the pipeline.
//
// VALUE is read as a YAML flow value (32, 4+, [29, 30], {A100: 1}, null),
// except for string fields (run, setup, name, workdir, cloud, infra, region,
// zone, instance_type, image_id, envs.*, file_mounts.*), which take VALUE as
// written unless it is quoted, so "run=echo a: b # c" runs exactly that.
// No message shows a value set below secrets.
// An empty VALUE removes the field, which then takes its default. Setting
// infra replaces cloud, region and zone, and setting one of those drops
// infra, so a retry can move a task that was placed with either form.
// The result may name the clouds in clouds, as in Parse.
func ApplySet(p *Pipeline, assignments []string, clouds Clouds) (*Pipeline, []Override, error) {
	rp, err := toRaw(p)
	if err != nil {
		return nil, nil, err
	}
	rp.clouds = clouds
	// Old values come from the input, not from after earlier assignments:
	// the diff is against the pipeline the retry started from.
	orig, err := toRaw(p)
	if err != nil {
		return nil, nil, err
	}
	ps := &problems{}
	var overrides []Override
	seen := map[string]int{}
	type done struct {
		task  int // -1 for the pipeline's name
		steps []step
	}
	var applied []done
	for _, a := range assignments {
		pathText, value, ok := strings.Cut(a, "=")
		pathText = strings.TrimSpace(pathText)
		if !ok || pathText == "" {
			ps.missing(a, "is not an assignment; write PATH=VALUE, e.g. resources.memory=32")
			continue
		}
		if !utf8.ValidString(a) {
			// JSON, which specs are stored in, would turn the bad bytes
			// into U+FFFD without a word.
			ps.missing(asciiText(pathText), "%s", invalidUTF8(pathText, value))
			continue
		}
		task, rest, shown, problem := selectTask(pathText, len(rp.tasks))
		if problem != "" {
			ps.add(pathText, nil, "%s", problem)
			continue
		}
		steps, problem := parsePath(rest)
		if problem != "" {
			ps.add(shown, nil, "%s", problem)
			continue
		}
		var old any
		var had bool
		if task < 0 {
			old, had = orig.header["name"]
		} else {
			old, had = lookup(orig.tasks[task], steps)
		}
		val, del, problem := parseValue(steps, value)
		if problem != "" && isSecret(steps) {
			// The YAML error can quote part of the value: say only how to
			// fix it.
			ps.missing(shown, "is not a YAML value (a secret's value is never shown); "+
				"quote it to set it as text, e.g. %s='...'", shown)
			continue
		}
		if problem != "" {
			ps.add(shown, value, "%s", problem)
			continue
		}
		if task < 0 {
			rp.setName(val, del)
		} else {
			node, problem := set(rp.tasks[task], steps, val, del, "")
			if problem != "" {
				ps.missing(shown, "%s", problem)
				continue
			}
			rp.tasks[task] = node
			dropOtherLocationForm(node, steps)
			dropCandidateAccelerators(node, steps)
		}
		if _, ok := seen[shown]; !ok {
			seen[shown] = len(overrides)
			oldText := ""
			if had {
				oldText = renderPlain(old, steps)
			}
			overrides = append(overrides, Override{Path: shown, Old: oldText})
			applied = append(applied, done{task: task, steps: steps})
		}
	}
	out, err := rp.decode()
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ps.list = append(ps.list, ve.Problems...)
		} else {
			return nil, nil, err
		}
	}
	if err := ps.err(); err != nil {
		return nil, nil, err
	}
	result, err := toRaw(out)
	if err != nil {
		return nil, nil, err
	}
	for i, d := range applied {
		if d.task < 0 {
			overrides[i].New = out.Name
			continue
		}
		if v, ok := lookup(result.tasks[d.task], d.steps); ok {
			overrides[i].New = renderPlain(v, d.steps)
		}
	}
	return out, overrides, nil
}

// toRaw turns a pipeline back into the decoded-YAML form Parse checks, so an
// edited copy goes through exactly the same validation as a file.
func toRaw(p *Pipeline) (rawPipeline, error) {
	rp := rawPipeline{filled: true}
	if p.Name != "" && (len(p.Tasks) != 1 || p.Name != p.Tasks[0].Name) {
		rp.setName(p.Name, false)
	}
	for i, t := range p.Tasks {
		b, err := json.Marshal(t)
		if err != nil {
			return rp, fmt.Errorf("encode task %d: %w", i, err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return rp, fmt.Errorf("decode task %d: %w", i, err)
		}
		if m, ok := v.(map[string]any); ok {
			// A git workdir and storage mounts go back to the fields they
			// are written in.
			if repo, ok := m["workdir_repo"]; ok {
				m["workdir"] = repo
				delete(m, "workdir_repo")
			}
			if sms, ok := m["storage_mounts"].(map[string]any); ok {
				mounts, _ := m["file_mounts"].(map[string]any)
				if mounts == nil {
					mounts = map[string]any{}
				}
				maps.Copy(mounts, sms)
				m["file_mounts"] = mounts
				delete(m, "storage_mounts")
			}
			// A required env goes back to the null it was written as, so
			// --set envs.NAME=VALUE fills it.
			if req, ok := m["required_envs"].([]any); ok {
				envs, _ := m["envs"].(map[string]any)
				if envs == nil {
					envs = map[string]any{}
				}
				for _, name := range req {
					if s, ok := name.(string); ok {
						envs[s] = nil
					}
				}
				m["envs"] = envs
				delete(m, "required_envs")
			}
		}
		rp.tasks = append(rp.tasks, v)
	}
	return rp, nil
}

// setName sets or removes the pipeline's name in its header document.
func (rp *rawPipeline) setName(v any, del bool) {
	h := maps.Clone(rp.header)
	if h == nil {
		h = map[string]any{}
	}
	if del {
		delete(h, "name")
	} else {
		h["name"] = v
	}
	rp.header, rp.hasHeader = h, len(h) > 0
}

var taskPrefix = lazyRegexp(`^tasks\[(\d+)\](?:\.(.*))?$`)

// selectTask picks the task a path is about, returns the path below it, and
// the path as it is shown in overrides and problems.
func selectTask(path string, n int) (task int, rest, shown, problem string) {
	if m := taskPrefix().FindStringSubmatch(path); m != nil {
		i, err := strconv.Atoi(m[1])
		if err != nil || i >= n {
			return 0, "", "", fmt.Sprintf("no such task; the pipeline has %d task(s), tasks[0] to tasks[%d]", n, n-1)
		}
		if m[2] == "" {
			return 0, "", "", "names a whole task; set one of its fields, e.g. " + path + ".run=..."
		}
		if n == 1 {
			return 0, m[2], m[2], ""
		}
		return i, m[2], path, ""
	}
	if n == 1 {
		return 0, path, path, ""
	}
	if path == "name" {
		return -1, "name", "name", ""
	}
	return 0, "", "", fmt.Sprintf("is ambiguous: the pipeline has %d tasks; prefix the path with the task, e.g. tasks[0].%s", n, path)
}

type step struct {
	key   string
	index int
	isIdx bool
}

// freeKeys are the fields whose keys are the user's own names (variables,
// paths, accelerators), so the rest of a path below them is one key.
func freeKeys() []string { return []string{"envs", "secrets", "file_mounts", "accelerators", "labels"} }

var stepRE = lazyRegexp(`^([^.\[\]]+)((?:\[\d+\])*)`)

func parsePath(path string) ([]step, string) {
	var steps []step
	rest := path
	for {
		m := stepRE().FindStringSubmatch(rest)
		if m == nil {
			return nil, "is not a field path; write names separated by dots, with [N] for list items, e.g. resources.any_of[0].region"
		}
		steps = append(steps, step{key: m[1]})
		for _, idx := range strings.Split(m[2], "[")[1:] {
			n, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			if err != nil {
				return nil, "has a list index out of range"
			}
			steps = append(steps, step{index: n, isIdx: true})
		}
		rest = rest[len(m[0]):]
		if rest == "" {
			return steps, ""
		}
		if rest[0] != '.' || len(rest) == 1 {
			return nil, fmt.Sprintf("is not a field path: unexpected %q; write names separated by dots, e.g. resources.memory", rest)
		}
		rest = rest[1:]
		if m[2] == "" && slices.Contains(freeKeys(), m[1]) {
			return append(steps, step{key: rest}), ""
		}
	}
}

// isSecret says the path is a secret or holds secrets, whose values no
// message may show.
func isSecret(steps []step) bool { return steps[0].key == "secrets" }

func stringField(steps []step) bool {
	last := steps[len(steps)-1]
	if last.isIdx {
		return false
	}
	if len(steps) >= 2 && slices.Contains([]string{"envs", "file_mounts"}, steps[len(steps)-2].key) {
		return true
	}
	return slices.Contains([]string{"name", "workdir", "setup", "run", "cloud", "infra", "region", "zone",
		"instance_type", "image_id"}, last.key)
}

// parseValue reads VALUE for the field at steps; del means remove it.
func parseValue(steps []step, text string) (v any, del bool, problem string) {
	if text == "" {
		return nil, true, ""
	}
	quoted := len(text) >= 2 && (text[0] == '"' || text[0] == '\'') && text[len(text)-1] == text[0]
	if stringField(steps) && !quoted {
		return text, false, ""
	}
	v, empty, err := decodeYAML(text)
	if err != nil {
		return nil, false, "is not a YAML value: " + shiftLines(err, 0)
	}
	if empty {
		return nil, false, ""
	}
	return v, false, ""
}

// set puts v at steps below node (creating mappings and lists on the way)
// and returns the new node; lists may grow by one item at their end.
func set(node any, steps []step, v any, del bool, at string) (any, string) {
	if len(steps) == 0 {
		return v, ""
	}
	s := steps[0]
	here := join(at, s.key)
	if s.isIdx {
		here = index(at, s.index)
	}
	if s.isIdx {
		list, ok := node.([]any)
		if node != nil && !ok {
			return nil, fmt.Sprintf("%s is %s, not a list; cannot use [%d] on it", at, typeName(node), s.index)
		}
		if s.index > len(list) {
			return nil, fmt.Sprintf("%s has %d item(s); use an index up to %d", at, len(list), len(list))
		}
		if len(steps) == 1 && del {
			if s.index < len(list) {
				list = slices.Delete(slices.Clone(list), s.index, s.index+1)
			}
			return list, ""
		}
		var child any
		if s.index < len(list) {
			child = list[s.index]
		}
		child, problem := set(child, steps[1:], v, del, here)
		if problem != "" {
			return nil, problem
		}
		if s.index == len(list) {
			return append(list, child), ""
		}
		list[s.index] = child
		return list, ""
	}
	m, ok := node.(map[string]any)
	if node != nil && !ok {
		return nil, fmt.Sprintf("%s is %s, not a mapping; cannot set %s in it", at, typeName(node), s.key)
	}
	if m == nil {
		m = map[string]any{}
	}
	if len(steps) == 1 && del {
		delete(m, s.key)
		return m, ""
	}
	child, problem := set(m[s.key], steps[1:], v, del, here)
	if problem != "" {
		return nil, problem
	}
	m[s.key] = child
	return m, ""
}

// dropOtherLocationForm keeps infra and cloud/region/zone from contradicting
// each other after one of them was set.
func dropOtherLocationForm(task any, steps []step) {
	last := steps[len(steps)-1]
	parentSteps := steps[:len(steps)-1]
	isResources := len(parentSteps) == 1 && parentSteps[0].key == "resources" ||
		len(parentSteps) == 3 && parentSteps[0].key == "resources" &&
			(parentSteps[1].key == "any_of" || parentSteps[1].key == "ordered") && parentSteps[2].isIdx
	if last.isIdx || !isResources {
		return
	}
	parent, _ := lookup(task, parentSteps)
	m, ok := parent.(map[string]any)
	if !ok {
		return
	}
	switch last.key {
	case "infra":
		delete(m, "cloud")
		delete(m, "region")
		delete(m, "zone")
	case "cloud", "region", "zone":
		delete(m, "infra")
	}
}

// dropCandidateAccelerators makes setting resources.accelerators (or
// gpus) apply to the whole task, as SkyPilot's --gpus does: the
// candidates an accelerator set or list was expanded into lose their own
// accelerators, and candidates left the same are listed once.
func dropCandidateAccelerators(task any, steps []step) {
	if len(steps) != 2 || steps[0].key != "resources" || (steps[1].key != "accelerators" && steps[1].key != "gpus") {
		return
	}
	res, ok := lookup(task, steps[:1])
	m, isMap := res.(map[string]any)
	if !ok || !isMap {
		return
	}
	other := map[string]string{"accelerators": "gpus", "gpus": "accelerators"}[steps[1].key]
	delete(m, other)
	for _, field := range []string{"any_of", "ordered"} {
		items, ok := m[field].([]any)
		if !ok {
			continue
		}
		var kept []any
		for _, item := range items {
			if im, ok := item.(map[string]any); ok {
				delete(im, "accelerators")
				delete(im, "gpus")
			}
			if !slices.ContainsFunc(kept, func(k any) bool { return reflect.DeepEqual(k, item) }) {
				kept = append(kept, item)
			}
		}
		if len(kept) == 1 && reflect.DeepEqual(kept[0], map[string]any{}) {
			delete(m, field)
			continue
		}
		m[field] = kept
	}
}

func lookup(node any, steps []step) (any, bool) {
	for _, s := range steps {
		if s.isIdx {
			list, ok := node.([]any)
			if !ok || s.index >= len(list) {
				return nil, false
			}
			node = list[s.index]
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			return nil, false
		}
		if node, ok = m[s.key]; !ok {
			return nil, false
		}
	}
	return node, true
}

// renderPlain shows a value for an override: strings bare, the rest as
// compact JSON, secret values masked.
func renderPlain(v any, steps []step) string {
	if len(steps) > 0 && steps[0].key == "secrets" {
		v = maskSecrets(v)
	}
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	}
	return render(v)
}

const maskedSecret = "***"

func maskSecrets(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = maskSecrets(x)
		}
		return out
	case nil:
		return nil
	}
	return maskedSecret
}

// invalidUTF8 says where an assignment holds bytes that are not UTF-8.
func invalidUTF8(path, value string) string {
	where, text := "value", value
	if !utf8.ValidString(path) {
		where, text = "path", path
	}
	at := firstInvalidUTF8(text)
	return fmt.Sprintf("holds a byte that is not UTF-8 (0x%02x at byte %d of the %s); sortie keeps text only as UTF-8: give it in UTF-8",
		text[at], at+1, where)
}

// firstInvalidUTF8 is the offset of the first byte of s that does not
// start a valid UTF-8 sequence, or -1.
func firstInvalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return -1
}

// asciiText writes s with its non-ASCII and invalid bytes escaped, as a
// Go string literal's inside.
func asciiText(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}
