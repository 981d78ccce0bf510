// Package pgtest runs a PostgreSQL server of a test binary's own: initdb
// on a temporary directory, the server on a free 127.0.0.1 port, a fresh
// database for each test, and the server stopped (an immediate shutdown,
// as `pg_ctl stop -m immediate`) and its directory removed at the end.
//
// initdb and the server refuse to run as root, and tests here run as
// root: then both run as the unprivileged system user "postgres" (the
// server package's), or "nobody" when there is none, switched to by the
// exec call itself (syscall.Credential), the data directory chowned to
// it. The server is the test process's child with a parent-death signal,
// so a test binary killed mid-run (a timeout) takes it along.
//
// It imports nothing else of sortie's: it is a test server, usable by any
// package's tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// ErrNoServer is wrapped by Start's error when no PostgreSQL server
// binaries are installed: a test may skip then.
var ErrNoServer = errors.New("PostgreSQL server binaries (initdb, postgres) not found under /usr/lib/postgresql/*/bin; make test installs postgresql-15 with apt, or install it by hand")

// Server is one running PostgreSQL server.
type Server struct {
	dir      string
	port     int
	password string
	cmd      *exec.Cmd
	exited   chan struct{}
	admin    *sql.DB
	n        atomic.Int64
	stopOnce sync.Once
}

// Bin returns the directory holding initdb and postgres: the newest
// version under /usr/lib/postgresql, else the one on PATH.
func Bin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && isExec(filepath.Join(filepath.Dir(real), "postgres")) {
			return filepath.Dir(real), nil
		}
	}
	return "", ErrNoServer
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Start initialises a database cluster in a new temporary directory and
// starts its server on a free port of 127.0.0.1, with fsync off (a test's
// data need not survive a crash of the machine). Stop ends it.
func Start() (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempBase(cred), "sortie-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, exited: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	pw := make([]byte, 16)
	rand.Read(pw)
	s.password = hex.EncodeToString(pw)
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("give %s to the server's user: %w", dir, err)
		}
	}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(s.password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if cred != nil {
		os.Chown(pwfile, int(cred.Uid), int(cred.Gid))
	}
	data := filepath.Join(dir, "data")
	initdb := command(cred, filepath.Join(bin, "initdb"), "-D", data, "-U", "sortie", "--pwfile", pwfile,
		"--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var lastErr error
	for range 3 { // a free port can be taken between finding and listening
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if lastErr = s.run(bin, data, cred); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	ok = true
	return s, nil
}

// serverUser is who initdb and the server run as: nil (this process's
// user) unless this process is root.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
		}
	}
	return nil, errors.New("running as root, and neither user postgres nor nobody exists to run PostgreSQL as (initdb refuses root)")
}

// tempBase is where the server's directory is made: the temporary
// directory, unless the server's user could not reach it (a TMPDIR under
// root's home), then /tmp.
func tempBase(cred *syscall.Credential) string {
	base := os.TempDir()
	if cred == nil {
		return base
	}
	for d := base; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

func command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	return cmd
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run starts the server and waits until it takes connections.
func (s *Server) run(bin, data string, cred *syscall.Credential) error {
	logPath := filepath.Join(s.dir, "server.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	if cred != nil {
		os.Chown(logPath, int(cred.Uid), int(cred.Gid))
	}
	cmd := command(cred, filepath.Join(bin, "postgres"), "-D", data,
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(s.port),
		"-c", "unix_socket_directories="+s.dir, "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	cfg, err := pgx.ParseConfig(s.url("postgres"))
	if err != nil {
		return err
	}
	admin := stdlib.OpenDB(*cfg)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = admin.PingContext(ctx)
		cancel()
		if err == nil {
			s.admin = admin
			return nil
		}
		select {
		case <-exited:
			admin.Close()
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited before taking connections: %s", tail(log))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			admin.Close()
			s.kill()
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres took no connection on 127.0.0.1:%d within a minute (%v): %s", s.port, err, tail(log))
		}
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

func (s *Server) url(db string) string {
	return fmt.Sprintf("postgres://sortie:%s@127.0.0.1:%d/%s?sslmode=disable", s.password, s.port, db)
}

// kill shuts the server down at once (SIGQUIT, pg_ctl's "immediate"
// mode), then kills it if it has not gone within 10 seconds.
func (s *Server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// Stop shuts the server down and removes its directory.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.admin != nil {
			s.admin.Close()
		}
		s.kill()
		os.RemoveAll(s.dir)
	})
}

// Database creates an empty database called name and returns its URL;
// it stays until the server stops (the bench's stores).
func (s *Server) Database(name string) (string, error) {
	if _, err := s.admin.ExecContext(context.Background(), "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.url(name), nil
}

// NewDatabase creates an empty database for t and returns its URL; it is
// dropped when t ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d", s.n.Add(1))
	ctx := context.Background()
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return s.url(name)
}

// Main is a test binary's TestMain with a server: it starts one, sets
// *srv to it (nil when no server binaries are installed: tests that need
// one skip, saying why), runs the tests and stops the server.
func Main(m *testing.M, srv **Server) int {
	// -short (make unit) starts no server outside the test binary.
	flag.Parse()
	if testing.Short() {
		short = true
		return m.Run()
	}
	s, err := Start()
	switch {
	case errors.Is(err, ErrNoServer):
		fmt.Fprintln(os.Stderr, "pgtest:", err)
	case err != nil:
		fmt.Fprintln(os.Stderr, "pgtest: start PostgreSQL:", err)
		return 1
	}
	*srv = s
	defer func() {
		if s != nil {
			s.Stop()
		}
	}()
	return m.Run()
}

// short says Main started no server because of -short.
var short bool

// Need returns s, or skips t when no server binaries are installed or
// the tests run with -short.
func Need(t testing.TB, s *Server) *Server {
	t.Helper()
	if s == nil && short {
		t.Skip("needs PostgreSQL, which -short (make unit) does not start; make test runs it")
	}
	if s == nil {
		t.Skip(ErrNoServer.Error())
	}
	return s
}
