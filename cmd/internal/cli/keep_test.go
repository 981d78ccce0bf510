package cli

import (
	"context"
	"sortie/controller/contract"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSSHArguments(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want SSHOptions
	}{
		{[]string{"7"}, SSHOptions{ID: 7}},
		{[]string{"7", "--node", "1"}, SSHOptions{ID: 7, Node: 1}},
		{[]string{"7", "--", "cat", "marker"}, SSHOptions{ID: 7, Argv: []string{"cat", "marker"}}},
		{[]string{"--node", "2", "7", "--", "ls", "--node", "-la"}, SSHOptions{ID: 7, Node: 2, Argv: []string{"ls", "--node", "-la"}}},
	} {
		got, err := parse(t, NewCmdSSH, tc.argv)
		if err != nil {
			t.Fatalf("%v: %v", tc.argv, err)
		}
		if diff := cmp.Diff(tc.want, *got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.argv, diff)
		}
	}
	for _, argv := range [][]string{{}, {"x"}, {"7", "8"}, {"7", "--node", "-1"}, {"--", "cat"}} {
		if _, err := parse(t, NewCmdSSH, argv); exitCode(err) != ExitUsage {
			t.Errorf("ssh %v: exit %d (%v), want 2", argv, exitCode(err), err)
		}
	}
	for _, argv := range [][]string{{}, {"x"}, {"1", "2"}} {
		if _, err := parse(t, NewCmdRelease, argv); exitCode(err) != ExitUsage {
			t.Errorf("release %v: exit %d (%v), want 2", argv, exitCode(err), err)
		}
	}
}

func TestShowSaysUntilWhenTheClusterIsKept(t *testing.T) {
	f, out, _ := testFactory()
	now := f.Now()
	until := now.Add(25 * time.Minute)
	released := now.Add(-time.Minute)
	reason := "released by user (jobs release)"
	d := &contract.JobDetail{JobView: contract.JobView{ID: 4, Name: "j", Status: "FAILED", SubmittedAt: now},
		Attempts: []contract.AttemptView{{Task: 0, Attempt: 1, Cluster: "sortie-4-0-1", StartedAt: now, KeptUntil: &until}}}
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Cluster:       sortie-4-0-1 kept until "+until.Local().Format("2006-01-02 15:04:05")+
		" (25 minutes left): `sortie jobs ssh 4`, `sortie jobs release 4`") {
		t.Errorf("kept:\n%s", out)
	}
	out.Reset()
	d.Attempts[0].ReleasedAt, d.Attempts[0].ReleasedReason = &released, &reason
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "released 1 minute ago: released by user (jobs release)") {
		t.Errorf("released:\n%s", out)
	}
}

// The exit status of the command run on the node is jobs ssh's.
func TestSSHExitsWithTheCommandsStatus(t *testing.T) {
	f, _, _ := testFactory()
	var asked contract.ShellRequest
	f.Service = func(context.Context) (Service, error) {
		return shellService{code: 42, asked: &asked}, nil
	}
	if code := Execute(f, []string{"jobs", "ssh", "3", "--node", "1", "--", "false"}); code != 42 {
		t.Errorf("exit %d, want the command's 42", code)
	}
	if asked.ID != 3 || asked.Node != 1 || !cmp.Equal(asked.Argv, []string{"false"}) || asked.Stdio.TTY {
		t.Errorf("asked %+v", asked)
	}
}

type shellService struct {
	Service
	code  int
	asked *contract.ShellRequest
}

func (s shellService) Shell(_ context.Context, req contract.ShellRequest) (int, error) {
	*s.asked = req
	return s.code, nil
}
func (s shellService) Close() error { return nil }
