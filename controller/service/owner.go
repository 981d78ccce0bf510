package service

import (
	"fmt"
	"os/user"

	"sortie/controller/store"
)

// Asker is who asks for a verb: the name recorded as a job's owner, a
// retry's requested_by and a cancel's cancelled_by, and whether the
// owner check lets them act on others' jobs.
type Asker struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
}

// LocalAsker is the user of a CLI that runs without a server: the name
// is $SORTIE_USER, else the OS user's; such a user owns the home (the
// store is their file) and so acts on every job.
func LocalAsker(getenv func(string) string) *Asker {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if v := getenv("SORTIE_USER"); v != "" {
		name = v
	}
	return &Asker{Name: name, Admin: true}
}

// ForbiddenError refuses a cancel, retry or forget of a job its asker does
// not own: only the owner or an admin may.
type ForbiddenError struct {
	Job   int64  `json:"job"`
	Owner string `json:"owner"`
	// Verb is what was refused: cancel, retry, forget, release or ssh.
	Verb string `json:"verb"`
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("job %d belongs to %s: only %s or an admin may %s it", e.Job, e.Owner, e.Owner, e.Verb)
}

// asker is s.Asker, or a local one.
func (s *Service) asker() *Asker {
	if s.Asker != nil {
		return s.Asker
	}
	return &Asker{Name: "", Admin: true}
}

// mayAct refuses verb on j unless the asker owns j or is an admin.
func (s *Service) mayAct(j *store.Job, verb string) error {
	a := s.asker()
	if a.Admin || j.Owner == a.Name {
		return nil
	}
	return &ForbiddenError{Job: j.ID, Owner: ownerName(j.Owner), Verb: verb}
}

// onlyOwn is the owner a filter is kept to: a user who is no admin
// selects only their own jobs by --name, --status, --since or --all.
func (s *Service) onlyOwn() string {
	if a := s.asker(); !a.Admin {
		return a.Name
	}
	return ""
}

func ownerName(o string) string {
	if o == "" {
		return "no one (a job from before owners)"
	}
	return o
}
