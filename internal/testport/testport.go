// Package testport reserves loopback ports for tests that must bind the same port again (a
// server restarted on its address, a gateway started again after a kill), and for any test that
// wants a port no other test on the machine is handed meanwhile.
//
// A reserved port is kept free for the whole test by two things:
//
//   - it is below the kernel's ephemeral range (net.ipv4.ip_local_port_range), so no process's
//     outgoing connection or bind to port 0 is ever given it;
//   - an advisory lock (flock) on a file named after the port, which every testport user in
//     every process on the machine takes before it uses the port and keeps until the test ends.
//     The kernel drops the lock when the process dies, so a killed test run leaks nothing.
//
// A program that binds one of these ports explicitly is not stopped by either; callers that
// start a server should still notice a failed bind.
package testport

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// portSpan is how many ports below the ephemeral range are used.
const portSpan = 10000

// portLease is a reserved port. release gives it back.
type portLease struct {
	port int
	lock *os.File
}

// TB is the part of testing.TB that Reserve uses, so that benchmarks' mains can use it too.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Reserve reserves a free loopback port for the rest of the test (tb's cleanup releases it).
// It fails the test when no port can be had.
func Reserve(tb TB) int {
	tb.Helper()
	lease, err := newLease()
	if err != nil {
		tb.Fatalf("reserving a loopback port: %v", err)
	}
	tb.Cleanup(lease.release)
	return lease.port
}

func newLease() (*portLease, error) {
	dir := filepath.Join(os.TempDir(), "mediagw-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	high := ephemeralLow() - 1
	low := max(high-portSpan+1, 1024)
	if high <= low {
		return nil, fmt.Errorf("no ports below the ephemeral range (it starts at %d)", high+1)
	}
	n := high - low + 1
	first := rand.IntN(n)
	const tries = 200
	for i := range min(tries, n) {
		port := low + (first+i)%n
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue // another test holds it
			}
			return nil, fmt.Errorf("locking %s: %v", f.Name(), err)
		}
		if !bindable(port) {
			f.Close() // closing drops the lock
			continue
		}
		return &portLease{port: port, lock: f}, nil
	}
	return nil, fmt.Errorf("no free port among %d tried in %d-%d", tries, low, high)
}

// bindable reports whether a listener can be opened on the loopback port now.
func bindable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	// The port was free, which is all that is asked; a close error changes nothing.
	_ = l.Close()
	return true
}

// release gives the port back (closing the file drops the lock). The file stays: removing it
// could let two tests lock two different files of one name.
func (l *portLease) release() {
	// Nothing was written; the close only drops the lock, which the kernel does anyway.
	_ = l.lock.Close()
}

// ephemeralLow is the first port of the kernel's ephemeral range, or Linux's default 32768
// when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := bytes.Fields(b)
	if len(fields) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(string(fields[0]))
	if err != nil || low <= 1024 {
		return 32768
	}
	return low
}
