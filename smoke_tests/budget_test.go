package smoke_tests

import (
	"strings"
	"testing"
)

// On a team server, an admin gives alice a monthly budget of $0: her
// launch is refused with exit status 4 and a message naming her, what she
// spent and her budget, nothing is stored, and `users list` shows her
// budget, spent and left; bob, without a budget, launches; once alice's
// budget is back to the default (none), she launches too.
func TestLaunchRefusedOverUserBudget(t *testing.T) {
	s := startServer(t)
	alice, _ := s.user("alice", false)
	bob, _ := s.user("bob", false)
	if r := s.must("server", "users", "budget", "alice", "0"); !strings.Contains(r.stdout, "alice's monthly budget: $0.00; spent $0.00 this month (UTC), $0.00 left") {
		t.Fatalf("users budget printed %q", r.stdout)
	}
	if r := s.run("server", "users", "budget", "carol", "10"); r.code != 2 || !strings.Contains(r.stderr, `user "carol"`) {
		t.Fatalf("budget of no such user: exit %d, stderr %q; want 2 naming carol", r.code, r.stderr)
	}
	if r := s.run("server", "users", "budget", "alice", "lots"); r.code != 2 || !strings.Contains(r.stderr, `budget "lots"`) {
		t.Fatalf("a budget that is no number: exit %d, stderr %q", r.code, r.stderr)
	}
	list := s.must("server", "users", "list").stdout
	if !strings.Contains(list, "BUDGET") || !strings.Contains(list, "SPENT") || !strings.Contains(list, "LEFT") {
		t.Fatalf("users list has no budget columns:\n%s", list)
	}
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "alice" && (len(f) < 7 || f[4] != "$0.00" || f[5] != "$0.00" || f[6] != "$0.00"):
			t.Fatalf("alice's line %q, want budget, spent and left $0.00", line)
		case len(f) > 0 && f[0] == "bob" && (len(f) < 7 || f[4] != "none" || f[6] != "-"):
			t.Fatalf("bob's line %q, want no budget", line)
		}
	}

	task := alice.write("t.yaml", "resources: {cloud: local}\nrun: echo hi\n")
	r := alice.run("jobs", "launch", "-d", task)
	if r.code != 4 || !strings.Contains(r.stderr, "alice has spent $0.00 of their monthly budget of $0.00") {
		t.Fatalf("alice's launch over her budget: exit %d, stderr %q; want 4 naming her budget", r.code, r.stderr)
	}
	if q := alice.must("jobs", "queue", "-a").stdout; strings.Contains(q, "t.yaml") || strings.Contains(q, " t ") {
		t.Fatalf("a refused launch stored a job:\n%s", q)
	}
	bob.launch(bob.write("t.yaml", "resources: {cloud: local}\nrun: echo hi\n"))

	s.must("server", "users", "budget", "alice", "default")
	alice.launch(task)
}
