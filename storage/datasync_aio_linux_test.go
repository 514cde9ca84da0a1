//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package storage

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Syncs from several goroutines at once go through AIO, each on a syncer of its own, and each
// file's data is there to read back.
func TestDatasyncThroughAIO(t *testing.T) {
	dir := t.TempDir()
	before := aioSyncs.Load()
	// Syncers are made only when none is free: the earlier tests may have pooled some.
	aioSyncers.mu.Lock()
	pooledBefore := len(aioSyncers.free)
	aioSyncers.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, 3*20)
	for g := range 3 {
		wg.Go(func() {
			f, err := os.Create(filepath.Join(dir, string(rune('a'+g))))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for i := range 20 {
				if _, err := f.Write(bytes.Repeat([]byte{byte(i)}, 4096)); err != nil {
					errs <- err
					return
				}
				if err := datasync(f); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := aioSyncs.Load() - before; got != 60 {
		t.Fatalf("%d of 60 syncs went through AIO", got)
	}
	for g := range 3 {
		b, err := os.ReadFile(filepath.Join(dir, string(rune('a'+g))))
		if err != nil || len(b) != 20*4096 || b[19*4096] != 19 {
			t.Fatalf("file %d: %d bytes, %v", g, len(b), err)
		}
	}
	aioSyncers.mu.Lock()
	pooled := len(aioSyncers.free)
	aioSyncers.mu.Unlock()
	if pooled < 1 || pooled > max(pooledBefore, 3) {
		t.Fatalf("%d syncers pooled after three concurrent users (%d before)", pooled, pooledBefore)
	}
}

// A descriptor that cannot be synced fails as fdatasync fails, and leaves AIO on for the next
// (here a read-only handle).
func TestDatasyncFailsAsFdatasync(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := datasync(r); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("sync of a pipe: %v, want EINVAL", err)
	}
	// A handle opened for reading, as logSync opens Badger's logs, is synced as well.
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := aioSyncs.Load()
	if err := datasync(f); err != nil {
		t.Fatal(err)
	}
	if aioSyncs.Load() != before+1 {
		t.Fatal("the sync after a failed one did not go through AIO")
	}
}

// A sync that finds no descriptor free for a new syncer's eventfd (EMFILE: the process is at its
// open-file limit for a moment) falls back to fdatasync, and AIO is tried again after
// aioRetryAfter syncs: a passing shortage does not turn AIO off for the life of the process.
func TestDatasyncRetriesAIOAfterADescriptorShortage(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The pooled syncers are set aside, so that the sync needs a new one.
	aioSyncers.mu.Lock()
	pooled := aioSyncers.free
	aioSyncers.free = nil
	aioSyncers.mu.Unlock()
	t.Cleanup(func() {
		aioSyncers.mu.Lock()
		aioSyncers.free = append(aioSyncers.free, pooled...)
		aioSyncers.mu.Unlock()
		aioSyncers.off.Store(false)
		aioSyncers.pause.Store(0)
	})

	// The open-file limit is lowered to the lowest free descriptor: the next one made fails.
	var limit unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &limit); err != nil {
		t.Fatal(err)
	}
	lowest, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Close(lowest); err != nil {
		t.Fatal(err)
	}
	short := limit
	short.Cur = uint64(lowest)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &short); err != nil {
		t.Fatal(err)
	}
	before := aioSyncs.Load()
	syncErr := datasync(f)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &limit); err != nil {
		t.Fatal(err)
	}
	if syncErr != nil {
		t.Fatalf("sync without a descriptor to spare: %v", syncErr)
	}
	if aioSyncs.Load() != before {
		t.Fatal("a sync went through AIO with no descriptor for its eventfd")
	}

	for i := range aioRetryAfter {
		if _, err := f.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := datasync(f); err != nil {
			t.Fatal(err)
		}
	}
	if got := aioSyncs.Load() - before; got != 0 {
		t.Fatalf("%d of the %d syncs after the shortage went through AIO: want none before %d", got, aioRetryAfter, aioRetryAfter)
	}
	if err := datasync(f); err != nil {
		t.Fatal(err)
	}
	if aioSyncs.Load() != before+1 {
		t.Fatalf("the sync after %d fdatasyncs did not go through AIO again", aioRetryAfter)
	}
}

// A sync whose completion cannot be reaped (io_getevents refused, here by a seccomp filter that
// lets io_submit through) fails, since its outcome is unknown; the syncer, which may still hold
// that completion, is not used again, and the syncs after it are made by fdatasync and succeed.
// The filter cannot be taken back, so the test runs in a process of its own.
func TestDatasyncWhoseCompletionCannotBeReaped(t *testing.T) {
	const child = "MEDIAGW_TEST_SECCOMP_CHILD"
	if os.Getenv(child) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDatasyncWhoseCompletionCannotBeReaped$", "-test.count=1")
		cmd.Env = append(os.Environ(), child+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	denySyscall(t, unix.SYS_IO_GETEVENTS, unix.EPERM)
	before := aioSyncs.Load()
	if err := datasync(f); !errors.Is(err, unix.EPERM) {
		t.Fatalf("sync whose completion could not be reaped: %v, want EPERM", err)
	}
	if aioSyncs.Load() != before+1 {
		t.Fatal("the sync did not go through AIO")
	}
	for i := range 3 {
		if _, err := f.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := datasync(f); err != nil {
			t.Fatalf("sync %d after the one that could not be reaped: %v", i+1, err)
		}
	}
}

// denySyscall makes every thread of the process fail the system call nr with errno, for good.
func denySyscall(t *testing.T, nr uintptr, errno unix.Errno) {
	t.Helper()
	const (
		ldAbsWord = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK      = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		retK      = unix.BPF_RET | unix.BPF_K
	)
	filter := []unix.SockFilter{
		{Code: ldAbsWord, K: 0}, // seccomp_data.nr
		{Code: jeqK, Jt: 0, Jf: 1, K: uint32(nr)},
		{Code: retK, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: retK, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog))); e != 0 {
		t.Fatalf("installing a seccomp filter: %v", e)
	}
}

// A syncer waits for its sync's completion in Go's network poller (the goroutine parked in
// "IO wait", holding no P), not in a read system call that keeps its thread and P.
func TestDatasyncWaitsInThePoller(t *testing.T) {
	s, err := takeAIOSyncer()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		var count [8]byte
		_, err := s.wakeup.Read(count[:])
		read <- err
	}()
	state := ""
	for range 500 {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		for g := range strings.SplitSeq(stacks, "\n\n") {
			if strings.Contains(g, "TestDatasyncWaitsInThePoller.func1") {
				state, _, _ = strings.Cut(g, "\n")
			}
		}
		// A read in the poller passes through [syscall] (its first, non-blocking read) on its
		// way to [IO wait]; a blocking read stays in [syscall] for all 500 looks.
		if strings.Contains(state, "[IO wait") {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Release the reader as a completion would.
	one := [8]byte{1}
	if _, err := unix.Write(s.efd, one[:]); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	putAIOSyncer(s)
	if !strings.Contains(state, "[IO wait") {
		t.Fatalf("the waiting goroutine: %q, want IO wait", state)
	}
}
