package testredis

import (
	"strings"
	"time"
)

// AddUser creates an ACL user that may, with password, run the given rules (a list of ACL
// rules such as storage.RedisACLCommands, then more) on the keys of the store prefixes that start
// with keyPrefix (the store writes its keys as "{prefix}:…"), and nothing else: no other key, no
// channel, no other command.
func (s *Server) AddUser(tb TB, name, password, keyPrefix, rules string, more ...string) {
	tb.Helper()
	args := []string{"ACL", "SETUSER", name, "reset", "on", ">" + password, "~{" + keyPrefix + "*", "resetchannels", "-@all"}
	args = append(args, strings.Fields(rules)...)
	args = append(args, more...)
	if err := s.Do(args...).Error(); err != nil {
		tb.Fatalf("ACL SETUSER %s: %v", name, err)
	}
}

// WaitRole waits until the server says (ROLE) it is a "master" or a "slave", until deadline.
func (s *Server) WaitRole(tb TB, want string, deadline time.Time) {
	tb.Helper()
	for {
		role, err := s.Do("ROLE").ToArray()
		if err == nil && len(role) > 0 {
			if r, _ := role[0].ToString(); r == want {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s is not a %s: %v", s.Addr, want, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
