package notify

import (
	"context"
	"fmt"

	"sortie/controller/store"
	"sortie/schema"
)

// jobHooks is what the notifier keeps of a job: its name, and per task
// its name and webhooks (nil: the default ones).
type jobHooks struct {
	name  string
	tasks []taskHooks
}

type taskHooks struct {
	name   string
	notify *schema.Notify
}

// maxCached bounds the jobs whose hooks are kept between events.
const maxCached = 4096

// job reads and keeps what the notifier needs of job id.
func (n *Notifier) job(ctx context.Context, id int64) (*jobHooks, error) {
	n.mu.Lock()
	h, ok := n.cache[id]
	n.mu.Unlock()
	if ok {
		return h, nil
	}
	j, err := n.Store.Job(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read job %d: %w", id, err)
	}
	h = &jobHooks{name: j.Name}
	// Without default webhooks, most jobs name none: their spec need not
	// be decoded to say so.
	if len(n.Default) > 0 || store.NamesNotify(j.Spec) {
		p, err := schema.Unmarshal(j.Spec, n.Clouds)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", id, err)
		}
		for _, t := range p.Tasks {
			h.tasks = append(h.tasks, taskHooks{name: t.Name, notify: t.Notify})
		}
	}
	n.mu.Lock()
	if len(n.cache) >= maxCached {
		clear(n.cache)
	}
	n.cache[id] = h
	n.mu.Unlock()
	return h, nil
}

func (n *Notifier) forget(id int64) {
	n.mu.Lock()
	delete(n.cache, id)
	n.mu.Unlock()
}

// hooksOf are the webhooks of a job's task: its own, else the default.
func (n *Notifier) hooksOf(ctx context.Context, id int64, task int) ([]schema.Webhook, error) {
	h, err := n.job(ctx, id)
	if err != nil {
		return nil, err
	}
	if task < len(h.tasks) && h.tasks[task].notify != nil {
		return h.tasks[task].notify.Webhooks, nil
	}
	return n.Default, nil
}

// names are a job's name and its task's, for the body.
func (n *Notifier) names(ctx context.Context, id int64, task int) (job, taskName string) {
	h, err := n.job(ctx, id)
	if err != nil {
		return "", ""
	}
	if task < len(h.tasks) {
		taskName = h.tasks[task].name
	}
	return h.name, taskName
}
