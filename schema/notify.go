package schema

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// Notify is a task's notify: the webhooks sortie posts the job's events
// to while the task is the job's current one. An empty list (notify:
// {webhooks: []}) sends nothing, not even config.yaml's default.
type Notify struct {
	Webhooks []Webhook `json:"webhooks"`
}

// Webhook is one receiver of a job's events.
type Webhook struct {
	// URL is where each event is POSTed: http or https, with a host.
	URL string `json:"url"`
	// Events are the kinds of event wanted (NotifyEvents); empty means
	// DefaultNotifyEvents, filled by ApplyDefaults.
	Events []string `json:"events,omitempty"`
	// Secret names the key, in the controller's config.yaml
	// (notify.secrets), that signs each body; empty sends it unsigned.
	// The key itself never appears in a task file or in the store.
	Secret string `json:"secret,omitempty"`
}

// The events a webhook can ask for.
const (
	// EventStatus is every change of the job's status.
	EventStatus = "status"
	// EventRecovery is the job moving to RECOVERING: a recovery from a
	// preemption or lost node, or a restart after a failure.
	EventRecovery = "recovery"
	// EventFailed is the job ending in any FAILED status.
	EventFailed = "failed"
	// EventSucceeded is the job ending SUCCEEDED.
	EventSucceeded = "succeeded"
)

// NotifyEvents are the kinds of event a webhook can ask for, in the order
// from the most general to the most particular.
func NotifyEvents() []string {
	return []string{EventStatus, EventRecovery, EventFailed, EventSucceeded}
}

// DefaultNotifyEvents are a webhook's events when it names none: what a
// person waits for, without every status change.
func DefaultNotifyEvents() []string {
	return []string{EventRecovery, EventFailed, EventSucceeded}
}

// maxWebhooks and maxURL bound what one task may ask: a job's every event
// is posted to each webhook.
const (
	maxWebhooks = 10
	maxURL      = 2048
)

var secretName = lazyRegexp(`^[A-Za-z0-9_.-]{1,64}$`)

func (d *decoder) notify(path string, v any) *Notify {
	m, ok := d.mapping(path, v, []string{"webhooks"}, nil)
	if !ok {
		return nil
	}
	n := &Notify{Webhooks: []Webhook{}}
	raw, present := m["webhooks"]
	if !present || raw == nil {
		return n
	}
	items, isList := raw.([]any)
	if !isList {
		d.ps.add(join(path, "webhooks"), raw, "is %s; expected a list of {url, events, secret}", typeName(raw))
		return n
	}
	if len(items) > maxWebhooks {
		d.ps.missing(join(path, "webhooks"), "has %d webhooks; give at most %d", len(items), maxWebhooks)
		return n
	}
	for i, it := range items {
		p := fmt.Sprintf("%s.webhooks[%d]", path, i)
		if w, ok := d.webhook(p, it); ok {
			n.Webhooks = append(n.Webhooks, w)
		}
	}
	return n
}

func (d *decoder) webhook(path string, v any) (Webhook, bool) {
	var w Webhook
	if v == nil {
		d.ps.missing(path, "is null; give {url: https://..., events: [...]}")
		return w, false
	}
	m, ok := d.mapping(path, v, []string{"url", "events", "secret"}, map[string]string{
		"secret_env": "sortie signs with a key from the controller's config.yaml, not the environment; write secret: NAME and set notify.secrets.NAME there",
	})
	if !ok {
		return w, false
	}
	before := len(d.ps.list)
	w.URL = d.str(join(path, "url"), m["url"])
	if _, present := m["url"]; !present {
		d.ps.missing(join(path, "url"), "is required; give the http or https address to post events to")
	} else if msg := CheckWebhookURL(w.URL); msg != "" {
		d.ps.add(join(path, "url"), w.URL, "%s", msg)
	}
	if ev, present := m["events"]; present {
		w.Events = d.events(join(path, "events"), ev)
	}
	if s, present := m["secret"]; present {
		w.Secret = d.str(join(path, "secret"), s)
		if _, isStr := s.(string); isStr && !secretName().MatchString(w.Secret) {
			d.ps.add(join(path, "secret"), w.Secret, "is not a key name; give the name (letters, digits, _ . -, at most 64) of a key under notify.secrets in the controller's config.yaml, never the key itself")
		}
	}
	return w, len(d.ps.list) == before
}

func (d *decoder) events(path string, v any) []string {
	if s, isStr := v.(string); isStr {
		v = []any{s}
	}
	items, ok := v.([]any)
	if !ok {
		d.ps.add(path, v, "is %s; expected a list of %s", typeName(v), strings.Join(NotifyEvents(), ", "))
		return nil
	}
	if len(items) == 0 {
		d.ps.missing(path, "is empty; list at least one of %s, or leave events out for %s", strings.Join(NotifyEvents(), ", "), strings.Join(DefaultNotifyEvents(), ", "))
		return nil
	}
	var out []string
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		s, isStr := it.(string)
		if !isStr {
			d.ps.add(p, it, "is %s; expected one of %s", typeName(it), strings.Join(NotifyEvents(), ", "))
			continue
		}
		e := strings.ToLower(s)
		switch {
		case !slices.Contains(NotifyEvents(), e):
			if sug := suggest(e, NotifyEvents()); sug != "" {
				d.ps.add(p, s, "is not an event; did you mean %q?", sug)
			} else {
				d.ps.add(p, s, "is not an event; expected one of %s", strings.Join(NotifyEvents(), ", "))
			}
		case slices.Contains(out, e):
			d.ps.add(p, s, "is listed twice; list each event once")
		default:
			out = append(out, e)
		}
	}
	return out
}

// CheckWebhookURL says what is wrong with u as a webhook's address, or ""
// when nothing is. A user and password in it are refused: they would be
// stored and shown in clear.
func CheckWebhookURL(u string) string {
	if u == "" {
		return "is empty; give the http or https address to post events to"
	}
	if len(u) > maxURL {
		return fmt.Sprintf("is longer than %d characters", maxURL)
	}
	if strings.IndexFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "holds a space or a control character; give an address such as https://hooks.example.com/sortie"
	}
	p, err := url.Parse(u)
	if err != nil {
		return "is not an address; give one such as https://hooks.example.com/sortie"
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return "is not an http or https address; give one such as https://hooks.example.com/sortie"
	}
	if p.Host == "" || p.Hostname() == "" {
		return "has no host; give one such as https://hooks.example.com/sortie"
	}
	if p.User != nil {
		return "holds a user or password, which would be stored and shown in clear; sign with secret: NAME instead"
	}
	return ""
}

// Wants says whether w asked for events of kind.
func (w Webhook) Wants(kind string) bool { return slices.Contains(w.Events, kind) }

func (n *Notify) clone() *Notify {
	if n == nil {
		return nil
	}
	c := &Notify{Webhooks: make([]Webhook, len(n.Webhooks))}
	for i, w := range n.Webhooks {
		w.Events = slices.Clone(w.Events)
		c.Webhooks[i] = w
	}
	return c
}

// applyDefaults gives each webhook without events the default ones.
func (n *Notify) applyDefaults() {
	if n == nil {
		return
	}
	if n.Webhooks == nil {
		n.Webhooks = []Webhook{}
	}
	for i := range n.Webhooks {
		if len(n.Webhooks[i].Events) == 0 {
			n.Webhooks[i].Events = DefaultNotifyEvents()
		}
	}
}

// CheckWebhook checks a webhook given outside a task file (config.yaml's
// default webhooks) as a task's are checked; each problem's Path is the
// field within the webhook (url, events[1], secret).
func CheckWebhook(w Webhook) []Problem {
	var out []Problem
	if msg := CheckWebhookURL(w.URL); msg != "" {
		v := ""
		if w.URL != "" {
			v = fmt.Sprintf("%q", w.URL)
		}
		out = append(out, Problem{Path: "url", Value: v, Message: msg})
	}
	var seen []string
	for i, e := range w.Events {
		p := Problem{Path: fmt.Sprintf("events[%d]", i), Value: fmt.Sprintf("%q", e)}
		switch e = strings.ToLower(e); {
		case !slices.Contains(NotifyEvents(), e):
			p.Message = "is not an event; expected one of " + strings.Join(NotifyEvents(), ", ")
		case slices.Contains(seen, e):
			p.Message = "is listed twice; list each event once"
		default:
			seen = append(seen, e)
			continue
		}
		out = append(out, p)
	}
	if w.Secret != "" && !secretName().MatchString(w.Secret) {
		out = append(out, Problem{Path: "secret", Message: "is not a key name; give the name (letters, digits, _ . -, at most 64) of a key under notify.secrets, never the key itself"})
	}
	return out
}

// WithDefaults is w with its events lower-cased, or the default events
// when it names none.
func (w Webhook) WithDefaults() Webhook {
	if len(w.Events) == 0 {
		w.Events = DefaultNotifyEvents()
		return w
	}
	ev := make([]string, len(w.Events))
	for i, e := range w.Events {
		ev[i] = strings.ToLower(e)
	}
	w.Events = ev
	return w
}
