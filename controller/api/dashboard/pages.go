package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"sortie/controller/api/web"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// pages are the parsed templates, one set per page, each with the layout
// and the shared parts.
type pages struct{ sets map[string]*template.Template }

var funcs = template.FuncMap{
	"statusClass": statusClass,
	"codes":       strategy.FormatExitCodes,
}

func parsePages() (*pages, error) {
	p := &pages{sets: map[string]*template.Template{}}
	for _, name := range []string{"queue", "job", "failures", "signin", "error", "confirm", "switch"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard templates: %w", err)
		}
		p.sets[name] = t
	}
	return p, nil
}

// render writes a whole page, or one of its parts (a block a script
// fetches to refresh the page in place), buffered so that an error of the
// template never leaves half a page.
func (d *Dashboard) render(w http.ResponseWriter, status int, set, block string, v any) error {
	var b bytes.Buffer
	if err := d.pages.sets[set].ExecuteTemplate(&b, block, v); err != nil {
		return fmt.Errorf("render %s: %w", set, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, err := b.WriteTo(w)
	return err
}

// base is what every page's layout shows.
type base struct {
	Title string
	User  *contract.Asker
	CSRF  string
	// Poll is how often the page refreshes, in milliseconds.
	Poll int64
	// Nav is the current section: queue or failures.
	Nav string
}

func (d *Dashboard) base(s *session, title, nav string) base {
	b := base{Title: title, Poll: d.o.Poll.Milliseconds(), Nav: nav}
	if s != nil {
		b.User, b.CSRF = s.asker, s.csrf
	}
	return b
}

// statusClass is the CSS class a status is coloured by.
func statusClass(st lifecycle.Status) string {
	switch {
	case st == lifecycle.Succeeded:
		return "ok"
	case st == lifecycle.Cancelled || st == lifecycle.Cancelling:
		return "off"
	case st.Terminal():
		return "bad"
	case st == lifecycle.Running:
		return "run"
	case st == lifecycle.Recovering:
		return "warn"
	}
	return "wait"
}

// statusView is a status with its reason, which shows on hover and focus.
type statusView struct {
	Status lifecycle.Status
	Reason string
}

func jobStatus(v *contract.JobView) statusView {
	s := statusView{Status: v.Status}
	switch {
	case v.FailureReason != nil && *v.FailureReason != "":
		s.Reason = *v.FailureReason
	case v.StatusReason != nil:
		s.Reason = *v.StatusReason
	case v.WaitReason != nil:
		s.Reason = "waiting: " + contract.Waiting(*v)
	}
	return s
}

func ago(now, t time.Time) string { return contract.Age(now.Sub(t)) + " ago" }

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// queueRow is one job of the queue, as `jobs queue` shows it.
type queueRow struct {
	ID         int64
	Name       string
	Owner      string
	Task       string
	Resources  string
	Location   string
	Submitted  string
	At         string
	Duration   string
	Cost       string
	Recoveries int
	Status     statusView
	ExitCodes  string
	RetryOf    *int64
}

func row(v *contract.JobView, now time.Time) queueRow {
	task := "-"
	if v.NumTasks > 1 {
		task = fmt.Sprintf("%d/%d", v.CurrentTask+1, v.NumTasks)
	}
	owner := deref(v.Owner)
	if owner == "" {
		owner = "-"
	}
	return queueRow{ID: v.ID, Name: v.Name, Owner: owner, Task: task, Resources: orDash(v.Resources), Location: orDash(v.Location), Submitted: ago(now, v.SubmittedAt), At: stamp(v.SubmittedAt),
		Duration: contract.Elapsed(v.StartedAt, v.EndedAt, now), Cost: contract.Cost(v.Cost, v.CostEstimate), Recoveries: v.RecoveryCount, Status: jobStatus(v),
		ExitCodes: strategy.FormatExitCodes(v.ExitCodes), RetryOf: v.RetryOf}
}

// queueFilter is the queue page's filters, from its address.
type queueFilter struct {
	Status, Name, Owner string
	All                 bool
}

func (f queueFilter) values() url.Values {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	if f.Name != "" {
		q.Set("name", f.Name)
	}
	if f.Owner != "" {
		q.Set("owner", f.Owner)
	}
	if f.All {
		q.Set("all", "true")
	}
	return q
}

type queueView struct {
	base
	Filter   queueFilter
	Statuses []lifecycle.Status
	Rows     []queueRow
	// Older is the next page's address, "" on the last; Newest the first
	// page's, "" on it.
	Older, Newest string
	// Live is the address the page refreshes its table from.
	Live string
	// StatusErr and NameErr are the filters' problems, shown by them.
	StatusErr, NameErr string
	Updated            string
}

// queue is the queue page, `jobs queue` with filters, a page of PageSize
// jobs at a time below the ?before= cursor; ?partial=1 is its table alone.
func (d *Dashboard) queue(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	f := queueFilter{Status: strings.ToUpper(strings.TrimSpace(q.Get("status"))), Name: strings.TrimSpace(q.Get("name")),
		Owner: strings.TrimSpace(q.Get("owner")), All: q.Get("all") == "true" || q.Get("all") == "on"}
	v := &queueView{base: d.base(s, "Queue", "queue"), Filter: f, Statuses: lifecycle.Statuses()}
	var before int64
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return &httpErr{status: http.StatusBadRequest, msg: fmt.Sprintf("before=%q is not a job id (a positive whole number): it is a page's cursor", b)}
		}
		before = n
	}
	req := contract.QueueRequest{All: f.All, NameGlob: f.Name, Owner: f.Owner, Finished: 50, Limit: d.o.PageSize + 1, Before: before}
	if f.Status != "" {
		req.Statuses = []lifecycle.Status{lifecycle.Status(f.Status)}
	}
	now := d.o.Now()
	err := s.svc.QueueEach(r.Context(), req, func(j contract.JobView) error {
		v.Rows = append(v.Rows, row(&j, now))
		return nil
	})
	status := http.StatusOK
	var ue *contract.UsageError
	switch {
	case errors.As(err, &ue):
		// A filter the service refuses: said by the filter, as the CLI says it.
		status = http.StatusBadRequest
		if strings.HasPrefix(ue.Error(), "--status") {
			v.StatusErr = ue.Error()
		} else {
			v.NameErr = ue.Error()
		}
	case err != nil:
		return err
	}
	fv := f.values()
	if len(v.Rows) > d.o.PageSize {
		v.Rows = v.Rows[:d.o.PageSize]
		older := f.values()
		older.Set("before", strconv.FormatInt(v.Rows[len(v.Rows)-1].ID, 10))
		v.Older = "/?" + older.Encode()
	}
	if before > 0 {
		v.Newest = "/?" + fv.Encode()
	}
	live := f.values()
	if before > 0 {
		live.Set("before", strconv.FormatInt(before, 10))
	}
	live.Set("partial", "1")
	v.Live = "/?" + live.Encode()
	v.Updated = now.UTC().Format("15:04:05 UTC")
	if q.Get("partial") != "" {
		return d.render(w, status, "queue", "queueTable", v)
	}
	return d.render(w, status, "queue", "layout", v)
}

// jobView is a job's page.
type jobView struct {
	base
	J         *contract.JobDetail
	Status    statusView
	Owner     string
	Resources string
	Location  string
	Submitted string
	At        string
	Duration  string
	ExitCodes string
	Failures  string
	// Cost is what the job cost; ChainCost what its retry chain did, ""
	// when it is no retry and was not retried.
	Cost      string
	ChainCost string
	// Waiting is the job's place and why it waits, "" when it does not.
	Waiting    string
	Terminal   bool
	MayAct     bool
	Cancelable bool
	Tasks      []taskRow
	// Last is the job's newest attempt, shown first; Older are the ones
	// before it, oldest first, folded away.
	Last     *attemptRow
	Older    []attemptRow
	Tries    []tryRow
	Chain    []chainRow
	Retry    retryForm
	Live     string
	LiveMore string
}

type taskRow struct {
	Task       int
	Name       string
	Status     statusView
	Recoveries int
	Failures   int
	Budget     int
	Linked     string
}

type attemptRow struct {
	JobID int64
	// OfTask says the attempt's task, in a pipeline.
	OfTask   bool
	Task     int
	TaskName string
	Attempt  int
	Where    string
	Cluster  string
	Started  string
	At       string
	Duration string
	Outcome  string
	Class    string
	Nodes    []nodeCode
	// Progress is the highest progress the attempt's task reported
	// ($SORTIE_PROGRESS); "" when none.
	Progress string
	// Cost is what the attempt cost, "-" when not known.
	Cost string
	// Checkpoint is the newest object of the task's MOUNT_CACHED
	// buckets when the attempt ended, CheckpointAt its last-modified
	// time; "" when none was seen.
	Checkpoint, CheckpointAt string
	Reason                   string
	Action                   string
	Decision                 string
	Running                  bool
}

type nodeCode struct {
	Rank int
	Code string
}

type tryRow struct {
	Task, Attempt, Round      int
	Where, Class, Message, At string
}

type chainRow struct {
	ID          int64
	Status      statusView
	Current     bool
	RetryOf     *int64
	RequestedBy string
	Reason      string
	Overrides   []contract.Override
}

// retryForm is the retry form's values and the server's problems with
// them, each shown by its field.
type retryForm struct {
	Reason, Sets string
	ReasonErr    string
	SetsErr      []string
	Err          string
}

// pathJob is the view of the job the request's path names.
func (d *Dashboard) pathJob(r *http.Request, s *session) (*jobView, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	dt, err := s.svc.Show(r.Context(), id)
	if err != nil {
		return nil, err
	}
	return d.jobView(s, dt), nil
}

func (d *Dashboard) jobView(s *session, dt *contract.JobDetail) *jobView {
	now := d.o.Now()
	v := &jobView{base: d.base(s, fmt.Sprintf("Job %d: %s", dt.ID, dt.Name), "queue"), J: dt, Status: jobStatus(&dt.JobView),
		Owner: deref(dt.Owner), Resources: orDash(dt.Resources), Location: orDash(dt.Location), Submitted: ago(now, dt.SubmittedAt), At: stamp(dt.SubmittedAt),
		Duration: contract.Elapsed(dt.StartedAt, dt.EndedAt, now), ExitCodes: strategy.FormatExitCodes(dt.ExitCodes),
		Terminal: dt.Status.Terminal(), Live: fmt.Sprintf("/jobs/%d?partial=1", dt.ID), LiveMore: fmt.Sprintf("/jobs/%d?partial=more", dt.ID)}
	if v.Owner == "" {
		v.Owner = "-"
	}
	v.Cost = contract.Cost(dt.Cost, dt.CostEstimate)
	if dt.WaitReason != nil {
		v.Waiting = contract.Waiting(dt.JobView)
	}
	if len(dt.Chain) > 1 {
		v.ChainCost = contract.Cost(dt.ChainCost, dt.ChainCostEstimate)
	}
	// What the server would refuse is not offered: only the owner or an
	// admin may cancel or retry.
	v.MayAct = s.asker.Admin || (dt.Owner != nil && *dt.Owner == s.asker.Name)
	v.Cancelable = v.MayAct && !v.Terminal && dt.Status != lifecycle.Cancelling
	v.Failures = strconv.Itoa(dt.RestartsOnErrors)
	if len(dt.Tasks) == 1 {
		v.Failures = fmt.Sprintf("%d, %s", dt.RestartsOnErrors, contract.RestartsLeft(dt.Tasks[0].RestartsOnErrors, dt.Tasks[0].MaxRestartsOnErrors))
	}
	names := map[int]string{}
	for _, t := range dt.Tasks {
		names[t.Task] = t.Name
		tr := taskRow{Task: t.Task, Name: t.Name, Status: statusView{Status: t.Status}, Recoveries: t.RecoveryCount,
			Failures: t.RestartsOnErrors, Budget: t.MaxRestartsOnErrors}
		if l := t.LinkedFrom; l != nil {
			tr.Linked = fmt.Sprintf("job %d task %d", l.Job, l.Task)
		}
		v.Tasks = append(v.Tasks, tr)
	}
	var attempts []attemptRow
	for _, a := range dt.Attempts {
		ar := attemptRow{JobID: dt.ID, OfTask: len(dt.Tasks) > 1, Task: a.Task, TaskName: names[a.Task], Attempt: a.Attempt, Cluster: a.Cluster, Started: ago(now, a.StartedAt),
			At: stamp(a.StartedAt), Outcome: string(a.State), Class: "run", Reason: deref(a.Reason), Action: deref(a.Action),
			Decision: deref(a.Decision), Running: a.EndedAt == nil}
		start := a.StartedAt
		ar.Duration = contract.Elapsed(&start, a.EndedAt, now)
		var where []string
		for _, p := range []*string{a.Cloud, a.Region, a.Zone} {
			if p != nil && *p != "" {
				where = append(where, *p)
			}
		}
		ar.Where = strings.Join(where, "/")
		if ar.Where == "" {
			ar.Where = "-"
		}
		if a.Outcome != nil {
			ar.Outcome = *a.Outcome
			ar.Class = outcomeClass(*a.Outcome)
		}
		for i, c := range a.ExitCodes {
			ar.Nodes = append(ar.Nodes, nodeCode{Rank: i, Code: strategy.FormatExitCodes([]*int{c})})
		}
		if a.Progress != nil {
			ar.Progress = strconv.FormatInt(*a.Progress, 10)
		}
		ar.Cost = contract.Cost(a.Cost, a.CostEstimate)
		if c := a.Checkpoint; c != nil {
			ar.Checkpoint, ar.CheckpointAt = c.Key, c.Modified.UTC().Format(time.RFC3339)
		}
		attempts = append(attempts, ar)
	}
	if n := len(attempts); n > 0 {
		v.Last, v.Older = &attempts[n-1], attempts[:n-1]
	}
	for _, t := range dt.LaunchTries {
		var where []string
		for _, p := range []string{t.Cloud, t.Region, t.Zone} {
			if p != "" {
				where = append(where, p)
			}
		}
		v.Tries = append(v.Tries, tryRow{Task: t.Task, Attempt: t.Attempt, Round: t.Round + 1, Where: strings.Join(where, "/"),
			Class: t.Class, Message: t.Message, At: stamp(t.At)})
	}
	for i := range dt.Chain {
		c := &dt.Chain[i]
		v.Chain = append(v.Chain, chainRow{ID: c.ID, Status: jobStatus(c), Current: c.ID == dt.ID, RetryOf: c.RetryOf,
			RequestedBy: deref(c.RequestedBy), Reason: deref(c.RetryReason), Overrides: c.Overrides})
	}
	return v
}

func outcomeClass(o string) string {
	switch o {
	case "succeeded":
		return "ok"
	case "cancelled":
		return "off"
	case "preempted", "node_lost", "launch_failed":
		return "warn"
	}
	return "bad"
}

// job is a job's page; ?partial=1 and ?partial=more are the parts that
// refresh: its summary, and its attempts, tasks, retry chain and launch
// tries.
func (d *Dashboard) job(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := d.pathJob(r, s)
	if err != nil {
		return err
	}
	switch r.URL.Query().Get("partial") {
	case "":
	case "more":
		return d.render(w, http.StatusOK, "job", "jobMore", v)
	default:
		return d.render(w, http.StatusOK, "job", "jobLive", v)
	}
	return d.render(w, http.StatusOK, "job", "layout", v)
}

func pathID(r *http.Request) (int64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, notFound("%q is not a job id (a positive whole number, as the queue shows).", v)
	}
	return id, nil
}

// logs is a job's log, the API's stream: newline-delimited JSON.
func (d *Dashboard) logs(w http.ResponseWriter, r *http.Request, s *session) error {
	err := web.StreamLogs(w, r, s.svc)
	if err == nil || web.Answered(w) {
		return err // the stream had begun: its error is only logged
	}
	// Before the stream: the API's JSON error, which the page's script reads.
	return web.WriteError(w, err)
}

// failureRow is one known failure.
type failureRow struct {
	contract.FailureView
	Short     string
	Owner     string
	Recorded  string
	At        string
	ExitCodes string
	MayForget bool
	// Verdict and Evidence say whether a confirmation run
	// (job_recovery.confirm_failures) failed the same way, and on what.
	Verdict  string
	Evidence []string
}

type failuresView struct {
	base
	Rows []failureRow
	// Forgot says which failure was just forgotten.
	Forgot string
}

func (d *Dashboard) failures(w http.ResponseWriter, r *http.Request, s *session) error {
	fs, err := s.svc.Failures(r.Context())
	if err != nil {
		return err
	}
	now := d.o.Now()
	v := &failuresView{base: d.base(s, "Known failures", "failures"), Forgot: r.URL.Query().Get("forgot")}
	for _, f := range fs {
		owner := deref(f.Owner)
		fr := failureRow{FailureView: f, Short: f.InputKey, Owner: owner, Recorded: ago(now, f.RecordedAt), At: stamp(f.RecordedAt),
			ExitCodes: strategy.FormatExitCodes(f.ExitCodes), MayForget: s.asker.Admin || owner == s.asker.Name}
		fr.Verdict, fr.Evidence = verdictCells(f)
		if len(fr.Short) > 12 {
			fr.Short = fr.Short[:12]
		}
		if fr.Owner == "" {
			fr.Owner = "-"
		}
		v.Rows = append(v.Rows, fr)
	}
	return d.render(w, http.StatusOK, "failures", "layout", v)
}

type signInView struct {
	base
	Next string
	Err  string
}

// signInForm shows the token form; a browser already signed in sees as
// whom, and its form carries that session's form token.
func (d *Dashboard) signInForm(w http.ResponseWriter, r *http.Request, next string, status int, err error) error {
	cur, _ := d.signedIn(r)
	v := &signInView{base: d.base(cur, "Sign in", ""), Next: localPath(next)}
	if err != nil {
		v.Err = err.Error()
	}
	return d.render(w, status, "signin", "layout", v)
}

type switchView struct {
	base
	New   string
	Token string
	Next  string
}

// switchForm asks a browser signed in as cur whether a link's token,
// which signs in as s, should sign it in instead: Continue posts the
// sign-in form with cur's form token; Stay goes on to next as cur.
func (d *Dashboard) switchForm(w http.ResponseWriter, cur, s *session, token, next string) error {
	v := &switchView{base: d.base(cur, "Switch user?", ""), New: s.asker.Name, Token: token, Next: localPath(next)}
	return d.render(w, http.StatusOK, "switch", "layout", v)
}

type errorView struct {
	base
	Status  int
	Message string
}

// errorPage answers an error: a page saying what went wrong, with the
// API's status and message for an error of the service; a part of a page
// gets the message alone.
func (d *Dashboard) errorPage(w http.ResponseWriter, r *http.Request, user string, err error) {
	status, msg := http.StatusInternalServerError, err.Error()
	var he *httpErr
	if errors.As(err, &he) {
		status = he.status
	} else {
		status, _ = web.Detail(err)
	}
	if partOfPage(r) {
		http.Error(w, msg, status)
		return
	}
	var b base
	if user != "" {
		if s, _ := d.signedIn(r); s != nil {
			b = d.base(s, "", "")
		}
	}
	b.Title = http.StatusText(status)
	if rerr := d.render(w, status, "error", "layout", &errorView{base: b, Status: status, Message: msg}); rerr != nil {
		d.o.Log.Warn("render an error page", "err", rerr)
	}
}
