//go:build !linux

package storage

import "os"

// datasync writes f's data to disk.
func datasync(f *os.File) error {
	return f.Sync()
}
