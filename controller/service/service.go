// Package service carries out the verbs a user types (launch, queue, show,
// logs, cancel, retry, failures, check, the local weather) over a home's store
// and controller. Its request and response types are the JSON contract
// (controller/contract's, aliased here): the CLI prints them with -o json, and
// an HTTP API serves the same. It never links a cloud SDK: what needs one
// (checking a cloud's credentials, reading a running cloud node's log) is
// asked of the controller program through hooks the caller sets.
//
// It must not import sortie/controller, controller/clouds/all or a cloud SDK:
// the verbs run in the CLI too, which links no cloud SDK.
package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/daemon"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// Service carries out the verbs over the local store and controller. A
// remote controller would implement the same verbs over HTTP.
type Service struct {
	Home   string
	Store  *store.Store
	Config config.Config
	// Clouds are the providers this process can open itself (local and
	// sim in the CLI).
	Clouds *clouds.Set
	Now    func() time.Time
	Getenv func(string) string
	// StartDaemon starts the controller if it is not running; tests replace it.
	StartDaemon func(ctx context.Context, home string) error
	// FindDaemon says whether StartDaemon can start the controller, before
	// a job is stored or marked: a launch that cannot start it stores
	// nothing. Nil means it can.
	FindDaemon func() error
	// CheckClouds answers `sortie check`; nil checks the clouds of Clouds.
	CheckClouds func(ctx context.Context) ([]clouds.Check, error)
	// RemoteLogs reads a running attempt's node logs on a cloud that is
	// not in Clouds; nil leaves such logs to their kept copies.
	RemoteLogs func(ctx context.Context, job int64, task, attempt int, offsets []int64) ([][]byte, error)
	// RemoteShell runs `jobs ssh` on a cloud that is not in Clouds; nil
	// refuses such a job.
	RemoteShell func(ctx context.Context, req contract.ShellRequest) (int, error)
	// RefreshPricesHook reads prices from the clouds now (`sortie prices
	// refresh`): the controller program's refresher, or in the CLI a run
	// of it; nil refuses.
	RefreshPricesHook func(ctx context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error)
	// Asker is who asks: the owner of what they launch, and whom the owner
	// check lets cancel, retry or forget what. Nil acts on every job and
	// records no name.
	Asker *contract.Asker
	// Inputs, on a server, finds an uploaded workdir or file mount by its
	// digest (the request's Inputs) and returns where it is unpacked; nil
	// refuses requests that name uploads.
	Inputs func(digest string) (string, error)
}

// Open opens home's store and configuration for the verbs; the providers
// it can open itself are those of cls.
func Open(ctx context.Context, h string, cls []clouds.Cloud) (*Service, error) {
	if err := home.Make(h); err != nil {
		return nil, err
	}
	cfg, err := config.Load(h, os.Getenv)
	if err != nil {
		return nil, err
	}
	st, err := store.OpenURL(ctx, cfg.StoreURL(), nil)
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", err)
	}
	// Tasks without notify post to config.yaml's webhooks. When it has
	// some, every job's changes are written to the outbox, a cancel made
	// while no controller runs too: this is recorded before the next
	// controller records it. A config without them never turns it off
	// here; the controller's notifier decides that.
	if len(cfg.Notify.Webhooks) > 0 {
		if err := st.SetDefaultWebhooks(ctx, true); err != nil {
			st.Close()
			return nil, err
		}
	}
	return &Service{Home: h, Store: st, Config: cfg, Clouds: clouds.NewSet(cfg, cls), Now: time.Now, Getenv: os.Getenv,
		StartDaemon: startDaemon(st, daemon.Ensure), FindDaemon: func() error { _, err := daemon.BinaryPath(os.Getenv); return err },
		Asker: LocalAsker(os.Getenv)}, nil
}

// Close closes the store.
func (s *Service) Close() error {
	if s.Store == nil {
		return nil // opened by OpenConfig
	}
	return s.Store.Close()
}

// Launch validates the task file, refuses inputs that are a known failure
// (unless RetryFailed), stores the job and makes sure the controller runs.
func (s *Service) Launch(ctx context.Context, req contract.LaunchRequest) (*contract.JobView, error) {
	pr, err := s.prepare(req)
	if err != nil {
		return nil, err
	}
	// What the dry run would refuse for its placements, the launch
	// refuses too, rather than store a job that can only fail prechecks.
	// A cloud that is not enabled here is refused as SkyPilot's optimizer
	// refuses it: its candidates are left out, and a task with none left
	// is refused, naming each cloud and why.
	probs := pr.missing
	for i, t := range pr.pipeline.Tasks {
		pls, refused, err := s.placements(ctx, t)
		switch {
		case err != nil:
			probs = append(probs, schema.Problem{Path: taskPath(pr.pipeline, i, "resources"), Message: err.Error()})
		case len(pls) == 0:
			for _, r := range refused {
				probs = append(probs, s.notEnabled(pr.pipeline, i, r))
			}
		case req.Warn != nil:
			for _, r := range refused {
				req.Warn(leftOut(pr.pipeline, i, r))
			}
		}
	}
	if len(probs) == 0 {
		// Last, as it asks the stores: every bucket can be read.
		bp, err := bucketProblems(ctx, pr.pipeline, s.storeNotEnabled)
		if err != nil {
			return nil, err
		}
		probs = bp
	}
	if len(probs) > 0 {
		return nil, &schema.ValidationError{Problems: probs}
	}
	return s.submit(ctx, pr.pipeline, submission{name: pr.name, baseDir: pr.baseDir, retryFailed: req.RetryFailed,
		secrets: pr.secrets, key: pr.key, owner: s.asker().Name})
}

type submission struct {
	name        string
	secrets     map[string]string
	key         string
	baseDir     string
	retryFailed bool
	retry       *store.Job // set for a manual retry
	reason      string
	overrides   []byte
	requestedBy string
	owner       string
	// links are the runs the pipeline's first tasks reuse (a retry from
	// the failed task): task i is linked to links[i].
	links []store.TaskRef
}

// submit stores a validated pipeline as a new job.
func (s *Service) submit(ctx context.Context, p *schema.Pipeline, sub submission) (*contract.JobView, error) {
	if err := s.checkBudget(ctx, sub.owner); err != nil {
		return nil, err
	}
	key, secrets := sub.key, sub.secrets
	if key != "" && !sub.retryFailed && sub.retry == nil {
		f, err := s.Store.KnownFailure(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("look up known failures: %w", err)
		}
		if f != nil {
			return nil, knownFailure(f, s.Now(), s.asker().Name)
		}
	}
	stored, err := p.WithoutSecretValues().Marshal()
	if err != nil {
		return nil, fmt.Errorf("store the spec: %w", err)
	}
	ask := strategy.AskOf(p)
	limits, quotas, err := s.Limits(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the limits: %w", err)
	}
	// Priced only under a dollar limit: pricing reads the price cache,
	// which a launch otherwise never waits for.
	if countsDollars(limits) {
		if c := s.expectedHourlyCost(ctx, p); c > 0 {
			ask[strategy.HourlyCost] = c
		}
	}
	if why := limits.Exceeded(sub.owner, ask); why != "" {
		where := "limits in config.yaml"
		if quotas {
			where = "limits in config.yaml and `sortie server quotas`"
		}
		return nil, &contract.UsageError{Err: fmt.Errorf("the job %s (%s): it could never start; ask for less, or have an admin raise the limit", why, where)}
	}
	j := &store.Job{Name: sub.name, Spec: stored, BaseDir: sub.baseDir, InputKey: key,
		RequestedBy: sub.requestedBy, RetryReason: sub.reason, Overrides: sub.overrides, Owner: sub.owner,
		Priority: p.Priority(), Ask: store.FormatAsk(ask)}
	if sub.retry != nil {
		j.RetryOf, j.Trigger = &sub.retry.ID, "manual"
	}
	tasks := make([]store.NewTask, len(p.Tasks))
	for i, t := range p.Tasks {
		tasks[i] = store.NewTask{Name: t.Name, Resources: storedResources(t)}
		if i < len(sub.links) {
			tasks[i].Linked = &sub.links[i]
		}
	}
	// The secrets are on disk before the job is committed, so no controller
	// can see the job without them.
	if err := s.findDaemon(); err != nil {
		return nil, err
	}
	id, err := s.Store.CreateJobWith(ctx, j, tasks, func(id int64) error { return home.WriteSecrets(s.Home, id, secrets) })
	if err != nil {
		return nil, fmt.Errorf("store the job: %w", err)
	}
	if err := s.StartDaemon(ctx, s.Home); err != nil {
		return nil, err
	}
	got, err := s.Store.Job(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read job %d back: %w", id, err)
	}
	v := viewJob(got, s.now())
	return &v, nil
}

// Queue lists jobs: every job with All, else the unfinished ones and the
// newest finished ones.
func (s *Service) Queue(ctx context.Context, req contract.QueueRequest) ([]contract.JobView, error) {
	var out []contract.JobView
	err := s.QueueEach(ctx, req, func(v contract.JobView) error { out = append(out, v); return nil })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueueEach is Queue one job at a time, newest first, for listings too
// long to hold: fn sees each job as the store reads it. With a Limit it
// stops after that many, and with Before it starts below that id: a page
// costs what it shows, however many jobs are behind it.
func (s *Service) QueueEach(ctx context.Context, req contract.QueueRequest, fn func(contract.JobView) error) error {
	for _, st := range req.Statuses {
		if !st.Valid() {
			return &contract.UsageError{Err: fmt.Errorf("--status: %q is not a job status (one of %s)", st, joinStatuses(lifecycle.Statuses()))}
		}
	}
	if err := store.ValidGlob(req.NameGlob); err != nil {
		return &contract.UsageError{Err: fmt.Errorf("--name: %q is not a valid pattern: %v", req.NameGlob, err)}
	}
	if req.Limit < 0 || req.Before < 0 {
		return &contract.UsageError{Err: fmt.Errorf("limit %d, before %d: a page's size and cursor are 0 or more", req.Limit, req.Before)}
	}
	f := store.JobFilter{Statuses: req.Statuses, NameGlob: req.NameGlob, Owner: req.Owner, BeforeID: req.Before, Limit: req.Limit}
	left := req.Limit
	now := s.now()
	each := func(j *store.Job) error {
		if req.Limit > 0 {
			if left == 0 {
				return errPageFull
			}
			left--
		}
		return fn(viewJob(j, now))
	}
	err := s.queueEach(ctx, req, f, each)
	if errors.Is(err, errPageFull) {
		return nil
	}
	return err
}

// errPageFull stops a listing once its page is full.
var errPageFull = errors.New("the page is full")

func (s *Service) queueEach(ctx context.Context, req contract.QueueRequest, f store.JobFilter, each func(*store.Job) error) error {
	if req.All || len(req.Statuses) > 0 {
		if err := s.Store.EachJob(ctx, f, each); err != nil {
			return fmt.Errorf("list jobs: %w", err)
		}
		return nil
	}
	// The newest finished jobs are few: read them first, then interleave
	// them by id with the unfinished ones as those stream by. They are the
	// newest of the whole listing, whatever page this is.
	done, err := s.Store.Jobs(ctx, store.JobFilter{NameGlob: req.NameGlob, Statuses: lifecycle.TerminalStatuses(), Limit: req.Finished, Owner: req.Owner})
	if err != nil {
		return fmt.Errorf("list finished jobs: %w", err)
	}
	for req.Before > 0 && len(done) > 0 && done[0].ID >= req.Before {
		done = done[1:]
	}
	f.Active = true
	err = s.Store.EachJob(ctx, f, func(j *store.Job) error {
		for len(done) > 0 && done[0].ID > j.ID {
			if err := each(done[0]); err != nil {
				return err
			}
			done = done[1:]
		}
		return each(j)
	})
	if err != nil {
		if errors.Is(err, errPageFull) {
			return err
		}
		return fmt.Errorf("list unfinished jobs: %w", err)
	}
	for _, j := range done {
		if err := each(j); err != nil {
			return err
		}
	}
	return nil
}

// Show returns a job with its tasks, attempts, launch tries and retry chain.
func (s *Service) Show(ctx context.Context, id int64) (*contract.JobDetail, error) {
	j, err := s.job(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &contract.JobDetail{JobView: viewJob(j, s.now()), Tasks: []contract.TaskView{}, Attempts: []contract.AttemptView{}, LaunchTries: []contract.LaunchTryView{}, Chain: []contract.JobView{},
		Notifications: []contract.NotificationView{}, Storage: []contract.StorageView{}}
	tasks, err := s.Store.Tasks(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("job %d: tasks: %w", id, err)
	}
	// Each task's budget is in the spec; a spec that cannot be read
	// leaves it 0 rather than hiding the job.
	p, _ := schema.Unmarshal(j.Spec, clouds.Schema())
	for _, t := range tasks {
		budget, ports := 0, []string{}
		if p != nil && t.Idx < len(p.Tasks) {
			budget = p.Tasks[t.Idx].Recovery().MaxRestartsOnErrors
			ports = taskPorts(p.Tasks[t.Idx].Resources)
		}
		d.Tasks = append(d.Tasks, contract.TaskView{Task: t.Idx, Name: t.Name, Status: t.Status, RecoveryCount: t.RecoveryCount,
			RestartsOnErrors: t.RestartsOnErrors, MaxRestartsOnErrors: budget, Ports: ports,
			StartedAt: utc(t.StartedAt), EndedAt: utc(t.EndedAt), LinkedFrom: viewLink(t.Linked), Size: viewSize(t.Size)})
	}
	as, err := s.Store.Attempts(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("job %d: attempts: %w", id, err)
	}
	now := s.now()
	for _, a := range as {
		d.Attempts = append(d.Attempts, viewAttempt(a, now))
	}
	tries, err := s.Store.LaunchTries(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("job %d: launch tries: %w", id, err)
	}
	for _, t := range tries {
		d.LaunchTries = append(d.LaunchTries, contract.LaunchTryView{Task: t.TaskIdx, Attempt: t.Attempt, Round: t.Round, Cloud: t.Cloud,
			Region: t.Region, Zone: t.Zone, Class: t.Class, Message: t.Message, At: t.At.UTC()})
	}
	if d.Retries, err = s.Store.Retries(ctx, id); err != nil {
		return nil, err
	}
	if d.Retries == nil {
		d.Retries = []int64{}
	}
	chain, err := s.Store.Chain(ctx, j.RootID)
	if err != nil {
		return nil, fmt.Errorf("job %d: retry chain: %w", id, err)
	}
	for _, c := range chain {
		v := viewJob(c, now)
		d.Chain = append(d.Chain, v)
		if v.Cost != nil {
			sum := *v.Cost
			if d.ChainCost != nil {
				sum += *d.ChainCost
			}
			d.ChainCost = &sum
		}
		d.ChainCostEstimate = d.ChainCostEstimate || v.CostEstimate
	}
	ds, err := s.Store.Deliveries(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("job %d: notifications: %w", id, err)
	}
	for _, n := range ds {
		d.Notifications = append(d.Notifications, viewDelivery(n))
	}
	syncs, err := s.Store.StorageSyncs(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	for _, m := range syncs {
		d.Storage = append(d.Storage, viewStorage(m))
	}
	if err := s.showConfirmations(ctx, d, j.InputKey); err != nil {
		return nil, err
	}
	return d, nil
}

func viewStorage(m store.StorageSync) contract.StorageView {
	scheme := m.Store
	if scheme == "gcs" {
		scheme = "gs"
	}
	v := contract.StorageView{Task: m.TaskIdx, Attempt: m.Attempt, Node: m.Node, Path: m.Path, Bucket: scheme + "://" + m.Bucket, Mode: m.Mode,
		DownloadedAt: utc(m.DownloadedAt), DownloadedBytes: m.DownloadedBytes,
		UploadedAt: utc(m.UploadedAt), UploadedBytes: m.UploadedBytes, UploadedTotal: m.UploadedTotal}
	if m.Error != "" {
		e := m.Error
		v.Error = &e
	}
	return v
}

// taskPorts are the ports a task opens: its resources' and those its
// candidates add, each once, in the order written.
func taskPorts(r schema.Resources) []string {
	out := []string{}
	for _, rs := range append(append([]schema.Resources{r}, r.AnyOf...), r.Ordered...) {
		for _, p := range rs.Ports {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s *Service) job(ctx context.Context, id int64) (*store.Job, error) {
	j, err := s.Store.Job(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("job %d: %w", id, contract.ErrNoSuchJob)
	case err != nil:
		return nil, fmt.Errorf("read job %d: %w", id, err)
	}
	return j, nil
}

// CancelTargets lists the jobs a cancel names that have not ended, oldest
// first, for `--dry-run` and the confirmation: an id that names no job is
// an error, one that has ended is left out unless it keeps its cluster
// (keep_on_failure), which the cancel releases.
func (s *Service) CancelTargets(ctx context.Context, req contract.CancelRequest) ([]contract.JobView, error) {
	given := 0
	for _, b := range []bool{len(req.IDs) > 0, !req.Filter.Empty(), req.All} {
		if b {
			given++
		}
	}
	if given != 1 {
		return nil, &contract.UsageError{Err: errors.New("name the jobs to cancel in one way: IDs, a filter (--name, --status, --since) or --all")}
	}
	var jobs []*store.Job
	if len(req.IDs) > 0 {
		for _, id := range req.IDs {
			j, err := s.job(ctx, id)
			if err != nil {
				return nil, err
			}
			if err := s.mayAct(j, "cancel"); err != nil {
				return nil, err
			}
			if !j.Status.Terminal() || s.keepsCluster(ctx, id) {
				jobs = append(jobs, j)
			}
		}
	} else {
		var err error
		if jobs, err = s.filtered(ctx, req.Filter, lifecycle.ActiveStatuses(), "an unfinished job"); err != nil {
			return nil, err
		}
	}
	out := make([]contract.JobView, len(jobs))
	for i, j := range jobs {
		out[i] = viewJob(j, s.now())
	}
	return out, nil
}

// cancelBatch is how many jobs one store transaction marks: a cancel of
// thousands of jobs never holds the write lock for long, so the
// controller's own writes (ending those jobs' attempts) go on between
// the batches.
const cancelBatch = 100

// Cancel marks the jobs a request names CANCELLING, cancelBatch at a time,
// and wakes the controller, which stops their attempts. It returns the ids
// it marked.
func (s *Service) Cancel(ctx context.Context, req contract.CancelRequest) ([]int64, error) {
	targets, err := s.CancelTargets(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, nil
	}
	if err := s.findDaemon(); err != nil {
		return nil, err
	}
	var marked []int64
	for start := 0; start < len(targets); start += cancelBatch {
		batch := targets[start:min(start+cancelBatch, len(targets))]
		ids := make([]int64, len(batch))
		for i, j := range batch {
			ids[i] = j.ID
		}
		m, err := s.Store.RequestCancelBy(ctx, ids, s.asker().Name)
		marked = append(marked, m...)
		if err != nil {
			if len(marked) > 0 {
				// Those marked are being cancelled: the controller must know.
				err = errors.Join(fmt.Errorf("cancel jobs: %w", err), s.StartDaemon(ctx, s.Home))
				return marked, err
			}
			return nil, fmt.Errorf("cancel jobs: %w", err)
		}
	}
	if len(req.IDs) > 0 {
		// A job named by id that has ended but keeps its cluster
		// (keep_on_failure): the cancel releases the cluster.
		rel, err := s.releaseOnCancel(ctx, slices.DeleteFunc(slices.Clone(req.IDs), func(id int64) bool { return slices.Contains(marked, id) }))
		if err != nil {
			return marked, err
		}
		marked = append(marked, rel...)
	}
	if len(marked) > 0 {
		if err := s.StartDaemon(ctx, s.Home); err != nil {
			return marked, err
		}
	}
	return marked, nil
}

func (s *Service) findDaemon() error {
	if s.FindDaemon == nil {
		return nil
	}
	if err := s.FindDaemon(); err != nil {
		return fmt.Errorf("cannot start the controller, so nothing was changed: %w", err)
	}
	return nil
}

func joinStatuses(ss []lifecycle.Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

func viewLink(r *store.TaskRef) *contract.TaskRef {
	if r == nil {
		return nil
	}
	return &contract.TaskRef{Job: r.Job, Task: r.Task}
}

// now is the service's clock: Now, or the real one.
func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
