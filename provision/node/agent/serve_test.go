package agent

import (
	"testing"
	"time"
)

// Memory goes back to the system when the last running node ends, at
// most once every FreeEvery, and on the first tick that finds nothing busy
// since; the server closes only once idle for Idle.
func TestServerFreesMemoryOncePerIdleSpell(t *testing.T) {
	frees := 0
	now := time.Unix(1_000_000, 0)
	s := &Server{Idle: 2 * time.Second, Free: func() { frees++ }, Now: func() time.Time { return now }, last: now}
	cycle := func() {
		if !s.begin() {
			t.Fatal("a server that is not closing refused a connection")
		}
		s.done()
	}
	cycle()
	if frees != 1 {
		t.Fatalf("the last node's end freed %d times; want 1", frees)
	}
	for i := 0; i < 3; i++ { // nodes ending one after another, at once
		now = now.Add(10 * time.Millisecond)
		cycle()
	}
	if frees != 1 {
		t.Fatalf("nodes ending within FreeEvery freed %d times; want still 1", frees)
	}
	// The first idle tick frees what those nodes took, once.
	if s.tick(now.Add(100*time.Millisecond)) || frees != 2 {
		t.Fatalf("first idle tick: %d frees; want 2, and not closing", frees)
	}
	if s.tick(now.Add(600*time.Millisecond)) || frees != 2 {
		t.Fatalf("second idle tick: %d frees; want still 2", frees)
	}
	// A node running at a tick: nothing freed then.
	s.begin()
	if s.tick(now.Add(time.Second)) || frees != 2 {
		t.Fatalf("a tick while a node runs: %d frees; want still 2", frees)
	}
	now = now.Add(time.Second)
	s.done()
	if frees != 3 {
		t.Fatalf("the last node ending FreeEvery after the last free: %d frees; want 3", frees)
	}
	if !s.tick(now.Add(2 * time.Second)) {
		t.Fatal("idle for Idle: the server did not close")
	}
	if s.begin() {
		t.Fatal("a closing server took a connection")
	}
}
