//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package storage

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A disk sync that leaves the Go scheduler free.
//
// fdatasync blocks its thread for as long as the disk takes (about a millisecond here), and
// Go's scheduler lets that thread keep its P, the right to run Go code, until the runtime's
// monitor takes it back: after one of the monitor's ticks, which grow from 20 µs to 10 ms while
// it finds nothing to take. With GOMAXPROCS=1 (a gateway on one core, or in a container limited
// to one CPU, which Go honours) no goroutine then runs during a sync: no request is served and
// no answer is read, and the core idles while the creates wait for the disk (bench/README.md,
// session 13).
//
// aioSync instead hands the sync to the kernel through Linux's asynchronous I/O
// (IOCB_CMD_FDSYNC: a kernel worker runs the same fdatasync) and waits for its completion on an
// eventfd in Go's network poller, where a waiting goroutine holds no P. Where the kernel refuses
// asynchronous I/O (ENOSYS, a seccomp filter's EPERM, EAGAIN past fs.aio-max-nr) or the file
// (EINVAL), datasync falls back to fdatasync.

// Linux AIO constants (include/uapi/linux/aio_abi.h).
const (
	iocbCmdFdsync = 3
	iocbFlagResfd = 1 << 0
)

// iocb is struct iocb of aio_abi.h on a little-endian 64-bit system (amd64, arm64, riscv64,
// ppc64le, loong64), 64 bytes: aio_key comes before aio_rw_flags there.
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   int32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event: res is the sync's result (0, or a negated errno).
type ioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

// aioSyncer is one asynchronous sync at a time: its own AIO context (so that reaping finds only
// its own completion) and eventfd. Syncers are pooled and live as long as the process.
type aioSyncer struct {
	ctx    uint64   // aio_context_t
	efd    int      // the eventfd's descriptor, signalled at completion
	wakeup *os.File // the same eventfd, non-blocking, in the network poller
	// cb and ev are on the heap, where the kernel may read and write them.
	cb   iocb
	cbs  [1]*iocb
	ev   [1]ioEvent
	zero unix.Timespec // io_getevents' timeout: none
}

var aioSyncers struct {
	mu   sync.Mutex
	free []*aioSyncer
	// off: the kernel refused an AIO context, a submission or a reap in a way that will not change
	// (aioRefused).
	off atomic.Bool
	// pause counts the syncs left to make by fdatasync after a refusal that may pass.
	pause atomic.Int64
}

// aioRetryAfter is how many syncs use fdatasync after AIO was refused for a reason that may
// pass (EMFILE or ENFILE for the eventfd, EAGAIN past fs.aio-max-nr, ENOMEM), before AIO is
// tried again.
const aioRetryAfter = 100

// aioSyncs counts the syncs made through AIO (tests).
var aioSyncs atomic.Int64

// datasync writes f's data (and the metadata needed to read it back) to disk: fdatasync, which
// is what msync of a shared mapping of f does, waited for without holding a P where the kernel
// allows (see above).
func datasync(f *os.File) error {
	fd := int(f.Fd())
	defer runtime.KeepAlive(f) // its finalizer must not close fd while the kernel syncs it
	if aioSyncers.off.Load() {
		return unix.Fdatasync(fd)
	}
	if aioSyncers.pause.Load() > 0 {
		aioSyncers.pause.Add(-1)
		return unix.Fdatasync(fd)
	}
	s, err := takeAIOSyncer()
	if err != nil {
		aioRefused(err)
		return unix.Fdatasync(fd)
	}
	submitted, reaped, err := s.datasync(fd)
	switch {
	case submitted && !reaped:
		// The sync's outcome could not be read, so it fails (it may have failed). The syncer,
		// which may still hold its completion, is not used again: a later sync on it could
		// reap this one's completion as its own.
		s.discard()
		aioRefused(err)
		return err
	case submitted:
		putAIOSyncer(s)
		return err
	}
	// Not submitted, the syncer is fine: the file cannot be synced (EINVAL, EBADF: fdatasync
	// tells the same) or AIO was refused.
	putAIOSyncer(s)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EBADF) {
		aioRefused(err)
	}
	return unix.Fdatasync(fd)
}

// aioRefused notes that the kernel refused an AIO context, a submission or a reap: AIO is off
// for good where the system forbids or lacks it (ENOSYS, a seccomp filter's EPERM), and paused
// for aioRetryAfter syncs otherwise (descriptors, memory or fs.aio-max-nr short for a while).
func aioRefused(err error) {
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		aioSyncers.off.Store(true)
		return
	}
	aioSyncers.pause.Store(aioRetryAfter)
}

func takeAIOSyncer() (*aioSyncer, error) {
	aioSyncers.mu.Lock()
	if n := len(aioSyncers.free); n > 0 {
		s := aioSyncers.free[n-1]
		aioSyncers.free = aioSyncers.free[:n-1]
		aioSyncers.mu.Unlock()
		return s, nil
	}
	aioSyncers.mu.Unlock()
	return newAIOSyncer()
}

func putAIOSyncer(s *aioSyncer) {
	aioSyncers.mu.Lock()
	aioSyncers.free = append(aioSyncers.free, s)
	aioSyncers.mu.Unlock()
}

func newAIOSyncer() (*aioSyncer, error) {
	s := &aioSyncer{}
	if _, _, errno := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&s.ctx)), 0); errno != 0 {
		return nil, errno
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		// The context is new and unused: nothing is lost if it lives as long as the process.
		_, _, _ = unix.Syscall(unix.SYS_IO_DESTROY, uintptr(s.ctx), 0, 0)
		return nil, err
	}
	s.efd = efd
	s.wakeup = os.NewFile(uintptr(efd), "mediagw-sync-eventfd") // non-blocking: pollable
	s.cbs[0] = &s.cb
	return s, nil
}

// datasync syncs fd and waits for it without holding a P. submitted reports that the sync was
// submitted, reaped that its completion was read: err is then its outcome. Submitted but not
// reaped, err is why io_getevents failed; not submitted, why io_submit did.
func (s *aioSyncer) datasync(fd int) (submitted, reaped bool, err error) {
	s.cb = iocb{opcode: iocbCmdFdsync, fildes: uint32(fd), flags: iocbFlagResfd, resfd: uint32(s.efd)}
	for {
		_, _, errno := unix.Syscall(unix.SYS_IO_SUBMIT, uintptr(s.ctx), 1, uintptr(unsafe.Pointer(&s.cbs[0])))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return false, false, errno
		}
		break
	}
	aioSyncs.Add(1)
	var count [8]byte
	if _, err := s.wakeup.Read(count[:]); err != nil {
		reaped, err := s.reapBlocking(err)
		return true, reaped, err
	}
	// The kernel posts the completion before it signals the eventfd: it is there to reap
	// without waiting.
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_GETEVENTS, uintptr(s.ctx), 1, 1,
			uintptr(unsafe.Pointer(&s.ev[0])), uintptr(unsafe.Pointer(&s.zero)), 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return true, false, errno
		case n == 0:
			reaped, err := s.reapBlocking(nil)
			return true, reaped, err
		}
		return true, true, eventErr(s.ev[0])
	}
}

// reapBlocking waits for the submitted sync in io_getevents itself (holding the P, as
// fdatasync would), when the eventfd could not be read (readErr) or told of no completion: the
// sync is in flight and must be reaped before the syncer is used again. reaped reports that
// it was; err is then the sync's outcome, otherwise why io_getevents failed.
func (s *aioSyncer) reapBlocking(readErr error) (reaped bool, err error) {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_GETEVENTS, uintptr(s.ctx), 1, 1,
			uintptr(unsafe.Pointer(&s.ev[0])), 0, 0)
		if errno == unix.EINTR || errno == 0 && n == 0 {
			continue
		}
		if errno != 0 {
			return false, errors.Join(readErr, errno)
		}
		// Clear the signal, if it came after all; an empty eventfd answers EAGAIN, which is fine.
		var count [8]byte
		_, _ = unix.Read(s.efd, count[:])
		return true, eventErr(s.ev[0])
	}
}

// discard lets go of a syncer whose sync may be in flight: io_destroy waits for it, then frees
// the context.
func (s *aioSyncer) discard() {
	// Nothing is left to do if it fails: the context then lives as long as the process.
	_, _, _ = unix.Syscall(unix.SYS_IO_DESTROY, uintptr(s.ctx), 0, 0)
	// The eventfd was only read.
	_ = s.wakeup.Close()
}

func eventErr(ev ioEvent) error {
	if ev.res < 0 {
		return unix.Errno(-ev.res)
	}
	return nil
}
