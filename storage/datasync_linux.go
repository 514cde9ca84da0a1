package storage

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ownLogSync: on Linux, logSync syncs Badger's logs itself, by fdatasync (handed to the kernel as
// asynchronous I/O where it allows, datasync_aio_linux.go).
const ownLogSync = true

// modTime is the modification time of f, by fstat (no path to resolve, nothing allocated).
func modTime(f *os.File) (time.Time, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return time.Time{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return time.Unix(st.Mtim.Unix()), nil
}
