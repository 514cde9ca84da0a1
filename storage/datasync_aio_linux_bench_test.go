//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package storage

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkDatasync is one 4 KiB write into a preallocated file (as into a Badger memtable log)
// and its disk sync, through datasync's AIO ("aio") or by a plain fdatasync ("fdatasync"): the
// time per sync and the process's CPU time per sync (cpu-us/op). Through AIO the sync itself
// runs in a kernel worker, whose CPU time is not the process's: the difference in cpu-us/op is
// the part of a sync's CPU that no longer shows in the gateway's own CPU time (and the AIO
// calls' cost). Run under the bench lock, one P as the bench's gateway:
//
//	flock /tmp/mediagw-bench.lock go test ./storage/ -run '^$' -bench Datasync -cpu 1 -count 6
func BenchmarkDatasync(b *testing.B) {
	for _, v := range []struct {
		name string
		sync func(*os.File) error
	}{
		{"aio", datasync},
		{"fdatasync", func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			const size = 1 << 20
			if err := f.Truncate(size); err != nil {
				b.Fatal(err)
			}
			if err := unix.Fsync(int(f.Fd())); err != nil {
				b.Fatal(err)
			}
			page := make([]byte, 4096)
			aioBefore := aioSyncs.Load()
			cpuBefore := cpuTime(b)
			i := 0
			for b.Loop() {
				page[0] = byte(i)
				if _, err := f.WriteAt(page, int64(i%(size/len(page)))*int64(len(page))); err != nil {
					b.Fatal(err)
				}
				if err := v.sync(f); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64((cpuTime(b)-cpuBefore).Microseconds())/float64(i), "cpu-us/op")
			if v.name == "aio" && aioSyncs.Load()-aioBefore != int64(i) {
				b.Fatalf("%d of %d syncs went through AIO", aioSyncs.Load()-aioBefore, i)
			}
		})
	}
}
