// Package mainenv lets a benchmark's main use the test helpers that take a testredis.TB (start
// a redis-server, make temporary directories) outside a test.
package mainenv

import (
	"log"
	"os"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// Env stands in for a testing.TB in a main. Close runs what the helpers registered with
// Cleanup, last first, and removes the temporary directories; Fatalf does that too, then exits.
type Env struct {
	// Prefix starts the names of the temporary directories TempDir makes.
	Prefix string

	cleanups []func()
	dirs     []string
}

// New returns an Env whose temporary directories are named after prefix.
func New(prefix string) *Env { return &Env{Prefix: prefix} }

// Helper does nothing: there is no test log to attribute lines to.
func (e *Env) Helper() {}

// Fatalf cleans up, then logs the message and exits.
func (e *Env) Fatalf(format string, args ...any) {
	e.Close()
	log.Fatalf(format, args...)
}

// Cleanup registers f to run on Close.
func (e *Env) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }

// TempDir makes a new temporary directory that Close removes.
func (e *Env) TempDir() string {
	dir, err := os.MkdirTemp("", e.Prefix)
	if err != nil {
		log.Fatal(err)
	}
	e.dirs = append(e.dirs, dir)
	return dir
}

// Badger opens a Badger store in a new temporary directory. Close closes the store, then
// removes the directory.
func (e *Env) Badger() *storage.Badger {
	dir := e.TempDir()
	store, err := storage.OpenBadger(dir, storage.BadgerOptions{})
	if err != nil {
		e.Fatalf("opening a Badger store in %s: %v", dir, err)
	}
	e.Cleanup(func() {
		if err := store.Close(); err != nil {
			log.Printf("closing the Badger store in %s: %v", dir, err)
		}
	})
	return store
}

// Close runs the registered cleanups, last first, and removes the temporary directories.
func (e *Env) Close() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	e.cleanups = nil
	for _, d := range e.dirs {
		if err := os.RemoveAll(d); err != nil {
			log.Printf("removing %s: %v", d, err)
		}
	}
	e.dirs = nil
}

// Interface guards
var _ testredis.TB = (*Env)(nil)
