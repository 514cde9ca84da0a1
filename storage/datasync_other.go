//go:build !linux

package storage

import (
	"errors"
	"os"
	"time"
)

// ownLogSync: elsewhere than on Linux, logSync leaves syncing to Badger's DB.Sync (whose msync
// is what fdatasync would be on Linux; other systems may need another call, or a writable
// handle).
const ownLogSync = false

func datasync(*os.File) error {
	return errors.New("not used on this system")
}

// modTime is the modification time of f.
func modTime(f *os.File) (time.Time, error) {
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}
