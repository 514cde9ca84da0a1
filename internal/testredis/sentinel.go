package testredis

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SentinelOptions make Start run a sentinel that monitors one master.
type SentinelOptions struct {
	// MasterName is the name of the monitored master set (`sentinel monitor <name> …`).
	MasterName string
	// Master is the master's loopback host:port.
	Master string
	// MasterPassword, when set, is the password the sentinel uses with the master and its
	// replicas (`sentinel auth-pass`).
	MasterPassword string
	// Password, when set, is the sentinel's own password (requirepass).
	Password string
}

// writeConfig writes the sentinel's configuration file (a sentinel rewrites it as it learns the
// topology), unless it exists from an earlier start. With certs the sentinel listens with TLS
// only and reaches the master and its replicas with TLS.
func (o *SentinelOptions) writeConfig(dir string, port int, certs *TLS) (string, error) {
	path := filepath.Join(dir, "sentinel.conf")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	host, masterPort, ok := strings.Cut(o.Master, ":")
	if !ok || o.MasterName == "" {
		return "", errors.New("a sentinel needs a master name and a master host:port")
	}
	listen := fmt.Sprintf("port %d\n", port)
	if certs != nil {
		listen = fmt.Sprintf("port 0\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n"+
			"tls-auth-clients optional\ntls-replication yes\n", port, certs.CertFile, certs.KeyFile, certs.CAFile)
	}
	conf := listen + fmt.Sprintf(`bind 127.0.0.1
daemonize no
dir %s
sentinel monitor %s %s %s 1
sentinel down-after-milliseconds %[2]s 2000
sentinel failover-timeout %[2]s 10000
sentinel parallel-syncs %[2]s 1
`, dir, o.MasterName, host, masterPort)
	if o.MasterPassword != "" {
		conf += fmt.Sprintf("sentinel auth-pass %s %s\n", o.MasterName, o.MasterPassword)
	}
	if o.Password != "" {
		conf += fmt.Sprintf("requirepass %s\n", o.Password)
	}
	return path, os.WriteFile(path, []byte(conf), 0o600)
}

// SentinelSetOptions shape the servers StartSentinel starts.
type SentinelSetOptions struct {
	// MasterName is the name the sentinel knows the master by.
	MasterName string
	// Password, when set, is required by the master and the replica.
	Password string
	// SentinelPassword, when set, is required by the sentinel.
	SentinelPassword string
	// TLS, when set, makes all three listen with TLS only, and replicate and monitor with TLS.
	TLS *TLS
}

// Sentinel is a master, one replica and one sentinel that monitors them, started on loopback.
type Sentinel struct {
	Master, Replica, Sentinel *Server
	// MasterName is the name the sentinel knows the master by.
	MasterName string
}

// StartSentinel starts a master, a replica of it and a sentinel, and waits until the sentinel
// knows the replica (so that it can fail over to it). They stop when the test ends.
func StartSentinel(tb TB, o SentinelSetOptions) *Sentinel {
	tb.Helper()
	// A replica's first sync starts at once, not after the default 5 s wait for more replicas.
	args := []string{"--repl-diskless-sync-delay", "0"}
	if o.Password != "" {
		// A master becomes a replica after a failover: both authenticate to the other.
		args = append(args, "--masterauth", o.Password)
	}
	if o.TLS != nil {
		args = append(args, "--tls-replication", "yes")
	}
	master := Start(tb, Options{Password: o.Password, TLS: o.TLS, Args: args})
	host, port, _ := strings.Cut(master.Addr, ":")
	replica := Start(tb, Options{Password: o.Password, TLS: o.TLS, Args: append([]string{"--replicaof", host, port}, args...)})
	// The sentinel reads the replica's link once it finds it, and again only seconds later:
	// started after the first sync, it finds the link up at once.
	deadline := time.Now().Add(60 * time.Second)
	replica.WaitLinkUp(tb, deadline)
	sentinel := Start(tb, Options{Password: o.SentinelPassword, TLS: o.TLS, Sentinel: &SentinelOptions{
		MasterName: o.MasterName, Master: master.Addr, MasterPassword: o.Password, Password: o.SentinelPassword,
	}})
	for {
		replicas, err := sentinel.Do("SENTINEL", "REPLICAS", o.MasterName).ToArray()
		if err == nil && len(replicas) == 1 {
			if fields, err := replicas[0].AsStrMap(); err == nil && !strings.Contains(fields["flags"], "disconnected") &&
				fields["master-link-status"] == "ok" {
				break
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the sentinel does not see the replica: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &Sentinel{Master: master, Replica: replica, Sentinel: sentinel, MasterName: o.MasterName}
}

// URL is the URL that reaches the master through the sentinel (rediss:// with TLS), with the
// master's password when it has one (the sentinel's password is not part of the URL).
func (s *Sentinel) URL() string {
	scheme := "redis://"
	if s.Master.opts.TLS != nil {
		scheme = "rediss://"
	}
	auth := ""
	if s.Master.Password != "" {
		auth = ":" + s.Master.Password + "@"
	}
	return scheme + auth + s.Sentinel.Addr + "?master_set=" + s.MasterName
}

// MasterAddr asks the sentinel which host:port is the master now.
func (s *Sentinel) MasterAddr() (string, error) {
	addr, err := s.Sentinel.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.MasterName).AsStrSlice()
	if err != nil {
		return "", err
	}
	if len(addr) != 2 {
		return "", fmt.Errorf("the sentinel answered %q", addr)
	}
	return addr[0] + ":" + addr[1], nil
}

// WaitReplicated waits until the replica has everything the master has written so far (its
// replication offset reaches the master's), so that a failover loses nothing written before.
// (WAIT on a connection of its own would not do: it waits only for that connection's writes.)
func (s *Sentinel) WaitReplicated(tb TB) {
	tb.Helper()
	offset := func(srv *Server, field string) (int64, error) {
		info, err := srv.Do("INFO", "replication").ToString()
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
		return 0, fmt.Errorf("no %s in INFO replication", field)
	}
	want, err := offset(s.Master, "master_repl_offset")
	if err != nil {
		tb.Fatalf("the master's replication offset: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := offset(s.Replica, "slave_repl_offset")
		if err == nil && got >= want {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the replica is at offset %d, the master at %d: %v", got, want, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// DemoteOldMaster makes the old master a replica of the new one (the old replica) at once: what
// the sentinel does when it next looks at the old master, up to 10 s after a failover. Until then
// the old master still takes writes, which it drops when it follows the new one.
func (s *Sentinel) DemoteOldMaster(tb TB) {
	tb.Helper()
	host, port, _ := strings.Cut(s.Replica.Addr, ":")
	if err := s.Master.Do("REPLICAOF", host, port).Error(); err != nil {
		tb.Fatalf("REPLICAOF on the old master: %v", err)
	}
}

// Failover moves the master role to the replica, losing nothing acknowledged, and returns once
// the old master follows the new one, failing tb if that takes past deadline. It waits until
// the replica has every write (WaitReplicated), asks the sentinel to fail over (SENTINEL
// FAILOVER), waits until the sentinel names the replica as the master and the replica says it is
// one, then demotes the old master at once (DemoteOldMaster) and waits until it is a replica.
// Clients that write afterwards write to the new master only.
func (s *Sentinel) Failover(tb TB, deadline time.Time) {
	tb.Helper()
	s.WaitReplicated(tb)
	if addr, err := s.MasterAddr(); err != nil || addr != s.Master.Addr {
		tb.Fatalf("the master before the failover is %q (%v), not %s", addr, err, s.Master.Addr)
	}
	if err := s.Sentinel.Do("SENTINEL", "FAILOVER", s.MasterName).Error(); err != nil {
		tb.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	for {
		if addr, err := s.MasterAddr(); err == nil && addr == s.Replica.Addr {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the sentinel did not promote the replica")
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Replica.WaitRole(tb, "master", deadline)
	s.DemoteOldMaster(tb)
	s.Master.WaitRole(tb, "slave", deadline)
}
