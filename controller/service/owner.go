package service

import (
	"os/user"

	"sortie/controller/contract"
	"sortie/controller/store"
)

// LocalAsker is the user of a CLI that runs without a server: the name
// is $SORTIE_USER, else the OS user's; such a user owns the home (the
// store is their file) and so acts on every job.
func LocalAsker(getenv func(string) string) *contract.Asker {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if v := getenv("SORTIE_USER"); v != "" {
		name = v
	}
	return &contract.Asker{Name: name, Admin: true}
}

// As is a copy of s asked by a: a server's, for each request's user.
func (s *Service) As(a *contract.Asker) *Service {
	c := *s
	c.Asker = a
	return &c
}

// asker is s.Asker, or a local one.
func (s *Service) asker() *contract.Asker {
	if s.Asker != nil {
		return s.Asker
	}
	return &contract.Asker{Name: "", Admin: true}
}

// mayAct refuses verb on j unless the asker owns j or is an admin.
func (s *Service) mayAct(j *store.Job, verb string) error {
	a := s.asker()
	if a.Admin || j.Owner == a.Name {
		return nil
	}
	return &contract.ForbiddenError{Job: j.ID, Owner: ownerName(j.Owner), Verb: verb}
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
