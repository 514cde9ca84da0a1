//go:build linux && !(amd64 || arm64 || riscv64 || ppc64le || loong64)

package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync writes f's data (and the metadata needed to read it back) to disk: fdatasync, which
// is what msync of a shared mapping of f does. (On the systems where datasync_aio_linux.go's
// struct layout holds, the sync is waited for without holding a P.)
func datasync(f *os.File) error {
	return unix.Fdatasync(int(f.Fd()))
}
