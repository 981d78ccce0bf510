package pgtest

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A server takes connections on 127.0.0.1 as a user other than root, each
// database is new and empty, and Stop leaves no process and no directory.
func TestServer(t *testing.T) {
	s, err := Start()
	if errors.Is(err, ErrNoServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	u1, u2 := s.NewDatabase(t), s.NewDatabase(t)
	if u1 == u2 {
		t.Fatalf("two tests got one database: %s", u1)
	}
	conn, err := pgx.Connect(ctx, u1)
	if err != nil {
		t.Fatal(err)
	}
	var tables int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("a new database has %d tables (%v)", tables, err)
	}
	var addr string
	if err := conn.QueryRow(ctx, `SELECT host(inet_server_addr())`).Scan(&addr); err != nil || addr != "127.0.0.1" {
		t.Errorf("server address %q (%v)", addr, err)
	}
	conn.Close(ctx)
	fi, err := os.Stat(s.dir + "/data")
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 && fi.Sys().(*syscall.Stat_t).Uid == 0 {
		t.Errorf("the data directory belongs to root; the server must run as another user")
	}
	pid := s.cmd.Process.Pid
	s.Stop()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("postgres (pid %d) still runs after Stop", pid)
	}
	if err := syscall.Kill(-pid, 0); err == nil {
		t.Errorf("a process of postgres's group (%d) still runs after Stop", pid)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", s.dir, err)
	}
}
