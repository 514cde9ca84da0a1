package caddymodule

import (
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/storage"
)

// stores holds one open Badger per directory. Badger locks its directory, and during a reload the
// old and the new config both use it, so it is opened by the first config that needs it and closed
// when the last one lets go.
var stores = caddy.NewUsagePool()

// openedStore lets the usage pool close a store.
type openedStore struct{ *storage.Badger }

func (s openedStore) Destruct() error { return s.Close() }

// openStore acquires the configured store from the pool.
func (a *App) openStore() error {
	cfg := StorageConfig{}
	if a.Storage != nil {
		cfg = *a.Storage
	}
	if cfg.Backend != "" && cfg.Backend != "badger" {
		return fmt.Errorf("storage: unknown backend %q (supported: badger)", cfg.Backend)
	}
	path := cfg.Path
	if path == "" {
		path = defaultStoragePath()
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("storage: %v", err)
	}
	key := "badger:" + filepath.Clean(path)
	val, _, err := stores.LoadOrNew(key, func() (caddy.Destructor, error) {
		db, err := storage.OpenBadger(path, storage.BadgerOptions{Logger: a.logger.Named("badger")})
		if err != nil {
			return nil, err
		}
		return openedStore{db}, nil
	})
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	a.store, a.storeKey = val.(openedStore).Badger, key
	return nil
}

// Interface guards
var _ caddy.Destructor = openedStore{}
