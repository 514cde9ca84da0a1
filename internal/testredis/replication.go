package testredis

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"time"
)

// StartReplicated starts a master and one replica of it, and returns once the master counts
// the replica (see Follow). Both stop when the test ends.
func StartReplicated(tb TB) (master, replica *Server) {
	tb.Helper()
	// The master starts a full sync at once, not after waiting 5 s for more replicas.
	master = Start(tb, Options{Args: []string{"--repl-diskless-sync-delay", "0"}})
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		tb.Fatalf("master address %q: %v", master.Addr, err)
	}
	replica = Start(tb, Options{Args: []string{"--replicaof", host, port}})
	replica.Follow(tb, master)
	return master, replica
}

// Follow makes s replicate master (REPLICAOF), again after a REPLICAOF NO ONE, and waits (30 s at
// most) until master counts it: WAIT 1 answers 1.
func (s *Server) Follow(tb TB, master *Server) {
	tb.Helper()
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		tb.Fatalf("master address %q: %v", master.Addr, err)
	}
	if err := s.Do("REPLICAOF", host, port).Error(); err != nil {
		tb.Fatalf("REPLICAOF on %s: %v", s.Addr, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, err := master.Do("WAIT", "1", "200").AsInt64(); err == nil && n >= 1 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the replica %s never caught up with the master %s", s.Addr, master.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitLinkUp waits until s, a replica, has finished its sync with its master (INFO replication
// says master_link_status:up), failing tb past deadline.
func (s *Server) WaitLinkUp(tb TB, deadline time.Time) {
	tb.Helper()
	for {
		info, err := s.Do("INFO", "replication").ToString()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the replica %s did not sync with its master: %q, %v", s.Addr, info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CommandCalls is how many times the server ran command (lower case, as INFO commandstats names
// it: "hmget", "evalsha"), 0 if never.
func (s *Server) CommandCalls(tb TB, command string) int {
	tb.Helper()
	info, err := s.Do("INFO", "commandstats").ToString()
	if err != nil {
		tb.Fatalf("INFO commandstats on %s: %v", s.Addr, err)
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "cmdstat_"+command+":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls, err := strconv.Atoi(n)
		if err != nil {
			tb.Fatalf("INFO commandstats line %q: %v", sc.Text(), err)
		}
		return calls
	}
	return 0
}
