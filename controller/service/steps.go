package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// stepper says the steps of a followed job as the controller records them
// in the store (placement, launch tries, what a launch waits for, the
// cluster up, the task started, each attempt's end and decision, the
// back-off before the next), each once. It reads only the store: the
// controller is another process, and the clouds are never asked.
type stepper struct {
	say    func(string)
	said   map[string]bool
	reason string // the status reason said last
	spec   *schema.Pipeline
	// from is the first attempt (by position) whose steps are said: a
	// follow that begins at the newest attempt says nothing older.
	from int
}

func newStepper(say func(string)) *stepper { return &stepper{say: say, said: map[string]bool{}} }

// once says text unless key was said, and tells whether it said it.
func (st *stepper) once(key, text string) bool {
	if st.said[key] {
		return false
	}
	st.said[key] = true
	st.say(text)
	return true
}

// step says what is new in job j, whose attempts are as. Only the first
// drained attempts, whose logs are printed whole, are said ended; the one
// after them is said up to its end, and the later ones not yet: a follow
// says an attempt's end after its last log line, not in the middle of it.
func (s *Service) step(ctx context.Context, st *stepper, j *store.Job, as []*store.Attempt, drained int) error {
	if st.spec == nil {
		st.spec, _ = schema.Unmarshal(j.Spec, clouds.Schema())
	}
	tries, err := s.Store.LaunchTries(ctx, j.ID)
	if err != nil {
		return fmt.Errorf("job %d: launch tries: %w", j.ID, err)
	}
	tasks, err := s.Store.Tasks(ctx, j.ID)
	if err != nil {
		return fmt.Errorf("job %d: tasks: %w", j.ID, err)
	}
	for i, a := range as {
		if i < st.from {
			continue
		}
		if i > drained {
			break
		}
		name := attemptName(j, a)
		key := fmt.Sprintf("%d/%d/", a.TaskIdx, a.Attempt)
		task := st.task(a.TaskIdx)
		nodes := 1
		if task != nil && task.NumNodes > 1 {
			nodes = task.NumNodes
		}
		// A placement is said once per round of launch tries it is
		// tried in: when it is chosen, and when its launch failed.
		placed := func(where, cloud, region, round string) {
			if st.once(key+"at:"+where+"#"+round, fmt.Sprintf("%s: placement chosen: %s, %s.", name, where, spotText(task, cloud, region))) {
				st.said[key+"at:"+where] = true
				st.say(fmt.Sprintf("%s: requesting %s there for cluster %s.", name, plural(nodes, "instance"), a.Cluster))
			}
		}
		for _, t := range tries {
			if t.TaskIdx == a.TaskIdx && t.Attempt == a.Attempt {
				where := strings.Join(nonEmpty(t.Cloud, t.Region, t.Zone), "/")
				round := fmt.Sprint(t.Round)
				if t.Class == strategy.ClassSetAside {
					// Not tried yet: quarantined, so tried last.
					st.once(key+"aside:"+where+"#"+round+":"+t.Message, sentence(fmt.Sprintf("%s: %s; it is tried last", name, t.Message)))
					continue
				}
				placed(where, t.Cloud, t.Region, round)
				st.once(key+"failed:"+where+"#"+round, sentence(fmt.Sprintf("%s: the launch in %s failed (%s): %s", name, where, t.Class, t.Message)))
			}
		}
		reused := false
		for _, b := range as[:i] {
			reused = reused || (b.TaskIdx == a.TaskIdx && b.Cluster == a.Cluster)
		}
		switch {
		case reused:
			// A restart on the cluster of the attempt before: nothing
			// is placed or launched.
			st.once(key+"up", fmt.Sprintf("%s: the task starts again on cluster %s (%s).", name, a.Cluster, strings.Join(a.InstanceIDs, ", ")))
		case a.Cloud != "":
			where := strings.Join(nonEmpty(a.Cloud, a.Region, a.Zone), "/")
			// A job waiting for its next round of launch tries still
			// shows the placement that failed last.
			waiting := j.Status == lifecycle.Pending && j.NextActionAt != nil && s.Now().Before(*j.NextActionAt)
			switch {
			case a.State == lifecycle.AttemptLaunching && !waiting && a.TaskIdx < len(tasks):
				placed(where, a.Cloud, a.Region, fmt.Sprint(tasks[a.TaskIdx].LaunchRound))
			case a.State != lifecycle.AttemptLaunching && !st.said[key+"at:"+where]:
				// Launched between two looks.
				placed(where, a.Cloud, a.Region, "launched")
			}
		}
		if a.State != lifecycle.AttemptLaunching && len(a.InstanceIDs) > 0 {
			st.once(key+"up", fmt.Sprintf("%s: cluster %s is up (%s); starting the task.", name, a.Cluster, strings.Join(a.InstanceIDs, ", ")))
		}
		ran := a.State == lifecycle.AttemptRunning || (a.State == lifecycle.AttemptEnded && len(a.ExitCodes) > 0)
		if ran {
			on := plural(max(len(a.InstanceIDs), 1), "node")
			// With a setup, run starts once the controller has seen
			// setup over on every node (RunAt).
			if task != nil && strings.TrimSpace(task.Setup) != "" {
				st.once(key+"setup", fmt.Sprintf("%s: setup started on %s.", name, on))
			}
			if task == nil || strings.TrimSpace(task.Setup) == "" || a.RunAt != nil {
				st.once(key+"run", fmt.Sprintf("%s: run started on %s.", name, on))
			}
		}
		if a.State != lifecycle.AttemptEnded || i >= drained {
			continue
		}
		ended := fmt.Sprintf("%s ended: %s", name, a.Outcome)
		if len(a.ExitCodes) > 0 {
			ended += ", exit codes " + strategy.FormatExitCodes(a.ExitCodes)
		}
		if a.Reason != "" {
			ended += " (" + a.Reason + ")"
		}
		if a.Decision != "" && a.Decision != a.Reason {
			ended += "; " + a.Decision
		}
		st.once(key+"end", sentence(ended))
		if i == len(as)-1 && !j.Status.Terminal() && j.NextActionAt != nil {
			if wait := j.NextActionAt.Sub(s.Now()); wait > 0 && a.TaskIdx < len(tasks) {
				st.once(key+"wait", backoffText(strategy.Action(a.Action), wait, tasks[a.TaskIdx], task))
			}
		}
	}
	// What a launch or a running attempt waits for, while it waits; once
	// the newest attempt has ended, the reason is its decision, said above.
	// It is said once the attempts before the newest are said whole.
	if r := j.StatusReason; r != st.reason && drained >= len(as)-1 {
		st.reason = r
		newestEnded := len(as) > 0 && as[len(as)-1].State == lifecycle.AttemptEnded
		if r != "" && !j.Status.Terminal() && !newestEnded {
			if len(as) > 0 {
				r = attemptName(j, as[len(as)-1]) + ": " + r
			}
			st.say(sentence(r))
		}
	}
	return nil
}

func (st *stepper) task(i int) *schema.Task {
	if st.spec == nil || i >= len(st.spec.Tasks) {
		return nil
	}
	return st.spec.Tasks[i]
}

// backoffText says the wait before the next attempt: "Restarting in 8s
// (back-off 2; restarts on error left 1 of 2)."
func backoffText(action strategy.Action, wait time.Duration, t *store.Task, task *schema.Task) string {
	verb := "Going on"
	switch action {
	case strategy.Restart:
		verb = "Restarting"
	case strategy.Recover:
		verb = "Recovering"
	case strategy.Escalate:
		verb = "Restarting on a larger size"
	}
	detail := fmt.Sprintf("back-off %d", t.RecoveryCount+t.RestartsOnErrors)
	if task != nil && action != strategy.Recover {
		if budget := task.Recovery().MaxRestartsOnErrors; budget > 0 {
			detail += "; " + contract.RestartsLeft(t.RestartsOnErrors, budget)
		}
	}
	return fmt.Sprintf("%s in %s (%s).", verb, wait.Round(time.Second), detail)
}

// spotText says whether a placement of task on cloud (region) asks for
// spot instances: an any_of or ordered item of that cloud that asks for
// them does, as the task's own use_spot does.
func spotText(task *schema.Task, cloud, region string) string {
	if task == nil {
		return "on-demand"
	}
	r := task.Resources
	spot := r.UseSpot
	for _, item := range append(append([]schema.Resources(nil), r.AnyOf...), r.Ordered...) {
		if (item.Cloud == "" || item.Cloud == cloud) && (item.Region == "" || item.Region == region) && item.UseSpot {
			spot = true
		}
	}
	if spot {
		return "spot"
	}
	return "on-demand"
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// sentence ends s with a full stop unless it ends with one already.
func sentence(s string) string {
	s = strings.TrimRight(s, " \n")
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

// attemptName names attempt a of job j in a step: "Attempt 2", or "Task
// 1, attempt 2" in a pipeline.
func attemptName(j *store.Job, a *store.Attempt) string {
	if j.NumTasks > 1 {
		return fmt.Sprintf("Task %d, attempt %d", a.TaskIdx, a.Attempt)
	}
	return fmt.Sprintf("Attempt %d", a.Attempt)
}
