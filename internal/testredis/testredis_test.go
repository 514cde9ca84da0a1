package testredis

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/debpkg"
)

// do sends one inline command and returns the first reply line.
func do(t *testing.T, addr, cmd string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "%s\r\n", cmd); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(line, "$") && !strings.HasPrefix(line, "$-1") {
		line, err = r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
	}
	return strings.TrimSpace(line)
}

func TestAcknowledgedWriteSurvivesCrash(t *testing.T) {
	s := Start(t, Options{})
	if got := do(t, s.Addr, "SET k v1"); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	pid := s.PID()
	s.Restart(true) // SIGKILL, then start on the same AOF
	if s.PID() == pid {
		t.Fatal("restart kept the old process")
	}
	if got := do(t, s.Addr, "GET k"); got != "v1" {
		t.Fatalf("after SIGKILL and restart GET k = %q, want v1", got)
	}
}

func TestPassword(t *testing.T) {
	s := Start(t, Options{Password: "s3cret"})
	if got := do(t, s.Addr, "GET k"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Fatalf("unauthenticated GET answered %q", got)
	}
	if !strings.Contains(s.URL(), ":s3cret@") {
		t.Fatalf("URL %q lacks the password", s.URL())
	}
}

// A restart whose port is taken for a moment (between the kill and the new start) waits for the
// port and comes back on it: its clients know only that address.
func TestRestartWaitsForItsPort(t *testing.T) {
	s := Start(t, Options{})
	if got := do(t, s.Addr, "SET k v1"); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	addr := s.Addr
	s.Kill()
	intruder, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("taking the port after the kill: %v", err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(300 * time.Millisecond)
		intruder.Close()
	}()
	s.start(s.opts)
	<-released
	if s.Addr != addr {
		t.Fatalf("restarted on %s, want %s", s.Addr, addr)
	}
	if got := do(t, s.Addr, "GET k"); got != "v1" {
		t.Fatalf("after the restart GET k = %q, want v1", got)
	}
}

// A replica stopped right after its first sync, while it may still be writing its first AOF
// (when redis-server refuses a SIGTERM), is stopped by SIGTERM, not killed after the wait.
func TestStopReplicaAfterSync(t *testing.T) {
	_, replica := StartReplicated(t) // returns once the master counts the synced replica
	replica.Stop()
	log, err := os.ReadFile(filepath.Join(replica.Dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "ready to exit, bye bye") {
		t.Fatalf("the replica was not stopped by SIGTERM:\n%s", debpkg.Tail(log))
	}
}
