//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Syncs from several goroutines at once go through AIO, each on a syncer of its own, and each
// file's data is there to read back.
func TestDatasyncThroughAIO(t *testing.T) {
	dir := t.TempDir()
	before := aioSyncs.Load()
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
	if pooled < 1 || pooled > 3 {
		t.Fatalf("%d syncers pooled after three concurrent users", pooled)
	}
}

// A descriptor that cannot be synced fails as fdatasync fails, and leaves AIO on for the next.
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
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
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
