package agent

import (
	"testing"
	"time"
)

// Memory goes back to the system once per burst of nodes, on the first
// tick that finds nothing busy, not each time the last node of the moment
// ends; and the server closes only once idle for Idle.
func TestServerFreesMemoryOncePerIdleSpell(t *testing.T) {
	frees := 0
	t0 := time.Unix(1_000_000, 0)
	s := &Server{Idle: 2 * time.Second, Free: func() { frees++ }, last: t0}
	for i := 0; i < 3; i++ { // nodes ending one after another
		if !s.begin() {
			t.Fatal("a server that is not closing refused a connection")
		}
		s.done()
	}
	if frees != 0 {
		t.Fatalf("memory freed %d times as nodes ended; want none before a tick", frees)
	}
	s.begin()
	if s.tick(t0.Add(time.Second)) || frees != 0 {
		t.Fatalf("a tick while a node runs: closing or %d frees; want neither", frees)
	}
	s.done()
	now := s.last
	if s.tick(now.Add(500*time.Millisecond)) || frees != 1 {
		t.Fatalf("first idle tick: %d frees; want 1, and not closing", frees)
	}
	if s.tick(now.Add(time.Second)) || frees != 1 {
		t.Fatalf("second idle tick: %d frees; want still 1", frees)
	}
	if !s.tick(now.Add(2 * time.Second)) {
		t.Fatal("idle for Idle: the server did not close")
	}
	if s.begin() {
		t.Fatal("a closing server took a connection")
	}
}
