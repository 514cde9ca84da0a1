package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// ownLogSync: on Linux, logSync syncs Badger's logs itself, by fdatasync.
const ownLogSync = true

// datasync writes f's data (and the metadata needed to read it back) to disk: fdatasync, which
// is what msync of a shared mapping of f does.
func datasync(f *os.File) error {
	return unix.Fdatasync(int(f.Fd()))
}
