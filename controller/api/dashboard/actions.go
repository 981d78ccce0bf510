package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"sortie/controller/api/web"
	"sortie/controller/contract"
	"sortie/schema"
)

// confirmCancel asks before a cancel: a page of its own, which works with
// the keyboard alone and without scripts.
func (d *Dashboard) confirmCancel(w http.ResponseWriter, r *http.Request, s *session) error {
	v, err := d.pathJob(r, s)
	if err != nil {
		return err
	}
	v.Title = fmt.Sprintf("Cancel job %d?", v.J.ID)
	if !v.MayAct {
		return forbidden("Job %d belongs to %s: only %s or an admin may cancel it.", v.J.ID, v.Owner, v.Owner)
	}
	return d.render(w, http.StatusOK, "confirm", "layout", v)
}

// cancel cancels one job, as `jobs cancel ID` does, and goes back to it.
func (d *Dashboard) cancel(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if _, err := s.svc.Cancel(r.Context(), contract.CancelRequest{IDs: []int64{id}}); err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d", id), http.StatusSeeOther)
	return nil
}

// retry retries one job as `jobs retry ID --reason R --set P=V...` does:
// the same service call, so the same checks and messages. It goes to the
// new job; a problem is shown on the job's page by the field it is about.
func (d *Dashboard) retry(w http.ResponseWriter, r *http.Request, s *session) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	form := retryForm{Reason: r.PostFormValue("reason"), Sets: r.PostFormValue("sets")}
	var sets []string
	for _, line := range strings.Split(form.Sets, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			sets = append(sets, line)
		}
	}
	req := contract.RetryRequest{IDs: []int64{id}, Reason: form.Reason, Sets: sets, RequestedBy: s.asker.Name}
	rs, err := s.svc.Retry(r.Context(), req)
	if err == nil && len(rs) == 1 && rs[0].Retry != nil {
		http.Redirect(w, r, fmt.Sprintf("/jobs/%d", rs[0].Retry.ID), http.StatusSeeOther)
		return nil
	}
	if err == nil {
		err = fmt.Errorf("the retry of job %d made no job", id)
	}
	status, detail := web.Detail(err)
	var ve *schema.ValidationError
	var ue *contract.UsageError
	switch {
	case errors.As(err, &ve):
		for _, p := range detail.Problems {
			form.SetsErr = append(form.SetsErr, p.Error())
		}
	case errors.As(err, &ue) && strings.HasPrefix(ue.Error(), "--reason"):
		form.ReasonErr = detail.Message
	case errors.As(err, &ue):
		form.SetsErr = []string{detail.Message}
	default:
		form.Err = detail.Message
	}
	dt, serr := s.svc.Show(r.Context(), id)
	if serr != nil {
		return errors.Join(err, serr)
	}
	v := d.jobView(s, dt)
	v.Retry = form
	return d.render(w, status, "job", "layout", v)
}

// forget forgets one known failure, as `jobs failures forget KEY` does.
func (d *Dashboard) forget(w http.ResponseWriter, r *http.Request, s *session) error {
	key, err := s.svc.ForgetFailure(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/failures?forgot="+url.QueryEscape(key), http.StatusSeeOther)
	return nil
}
