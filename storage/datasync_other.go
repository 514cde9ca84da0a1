//go:build !linux

package storage

import (
	"errors"
	"os"
)

// ownLogSync: elsewhere than on Linux, logSync leaves syncing to Badger's DB.Sync (whose msync
// is what fdatasync would be on Linux; other systems may need another call, or a writable
// handle).
const ownLogSync = false

func datasync(*os.File) error {
	return errors.New("not used on this system")
}
