package testport

import (
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// A reserved port is below the ephemeral range, bindable, and not handed out again while it is
// held, in this process or (through the lock file) in any other.
func TestReserve(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		port := Reserve(t)
		if port >= ephemeralLow() || port < 1024 {
			t.Fatalf("port %d is not below the ephemeral range (from %d)", port, ephemeralLow())
		}
		if seen[port] {
			t.Fatalf("port %d was reserved twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("the reserved port %d cannot be bound: %v", port, err)
		}
		l.Close()
	}
}

// A port that is held by a lease cannot be locked by anyone else (another open of its file, as
// another process would make) until it is released.
func TestLeaseExcludes(t *testing.T) {
	a, err := newLease()
	if err != nil {
		t.Fatal(err)
	}
	tryLock := func() error {
		f, err := os.OpenFile(a.lock.Name(), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err := tryLock(); err == nil {
		t.Fatalf("port %d could be locked while leased", a.port)
	}
	a.release()
	if err := tryLock(); err != nil {
		t.Fatalf("port %d could not be locked after its release: %v", a.port, err)
	}
}
