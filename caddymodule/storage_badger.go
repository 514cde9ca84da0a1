package caddymodule

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

func init() {
	caddy.RegisterModule(BadgerStorage{})
}

// StoreBackend is what a module in the mediagw.storage namespace provides: a way to open the
// state store it describes. The app opens each store once per identity and shares it across
// configs (a reload overlaps the old and the new config), closing it when the last config lets go.
type StoreBackend interface {
	// StoreIdentity names the store the module's settings describe: two configs with the same
	// identity share one open store. It must not contain secrets.
	StoreIdentity() (string, error)
	// OpenStore opens the store. It is called once per identity while any config uses it; the
	// Store it returns is closed by the app.
	OpenStore(logger *zap.Logger) (storage.Store, error)
}

// BadgerStorage is the embedded state store (module mediagw.storage.badger): Badger in a local
// directory, for one gateway process. Writes are synced to disk before they are acknowledged;
// concurrent writes share syncs.
//
// Caddyfile: `storage badger [<dir>]`.
type BadgerStorage struct {
	// Path is the Badger directory. Default: the "mediagw" folder of Caddy's data directory.
	Path string `json:"path,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (BadgerStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "mediagw.storage.badger",
		New: func() caddy.Module { return new(BadgerStorage) },
	}
}

func (b *BadgerStorage) dir() (string, error) {
	path := b.Path
	if path == "" {
		path = defaultStoragePath()
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("badger storage: %v", err)
	}
	return filepath.Clean(path), nil
}

// StoreIdentity is the cleaned absolute directory.
func (b *BadgerStorage) StoreIdentity() (string, error) {
	dir, err := b.dir()
	return "badger:" + dir, err
}

// OpenStore opens (creating if needed) the Badger directory.
func (b *BadgerStorage) OpenStore(logger *zap.Logger) (storage.Store, error) {
	dir, err := b.dir()
	if err != nil {
		return nil, err
	}
	if err := writableDir(dir); err != nil {
		return nil, fmt.Errorf("storage badger %s: %v; give a directory this user can create and write (storage badger <dir> in the mediagw global option)", dir, err)
	}
	store, err := storage.OpenBadger(dir, storage.BadgerOptions{Logger: logger})
	if err != nil && strings.Contains(err.Error(), "Cannot acquire directory lock") {
		return nil, fmt.Errorf("storage badger %s: another process (a second gateway?) has this directory open; stop it, give this gateway a directory of its own, or share state between gateways with storage redis", dir)
	}
	return store, err
}

// writableDir creates dir if needed and checks that a file can be made in it, so that a
// directory this user may not write is reported as such rather than as Badger's error.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".mediagw-write-check-*")
	if err != nil {
		return fmt.Errorf("the directory is not writable: %v", err)
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

// UnmarshalCaddyfile sets up the backend from Caddyfile tokens. Syntax:
//
//	storage badger [<dir>]
func (b *BadgerStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the backend name
	args := d.RemainingArgs()
	if len(args) > 1 {
		return d.Err("usage: storage badger [<dir>]")
	}
	if len(args) == 1 {
		b.Path = args[0]
	}
	if d.NextBlock(d.Nesting()) {
		return d.Errf("storage badger takes no block (found %q)", d.Val())
	}
	return nil
}

// Interface guards
var (
	_ StoreBackend          = (*BadgerStorage)(nil)
	_ caddyfile.Unmarshaler = (*BadgerStorage)(nil)
)
