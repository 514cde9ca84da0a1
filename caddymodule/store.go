package caddymodule

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/storage"
)

// stores holds one open Badger per directory. Badger locks its directory, and during a reload the
// old and the new config both use it, so it is opened by the first config that needs it and closed
// when the last one lets go.
var stores = caddy.NewUsagePool()

// usageFlushInterval is how often request and task counts are written to the store.
const usageFlushInterval = 2 * time.Second

// openedStore is a store and what lives as long as it: the usage meter that writes to it, the
// per-key rate limiters, and the traced view of it that handlers use (one per store, so that
// handlers of the old and the new config during a reload share it).
type openedStore struct {
	*storage.Badger
	traced *tracedStore
	meter  *accounting.Meter
	rates  *accounting.Rates
}

// Destruct flushes the meter and closes the store, when the last config lets go of it.
func (s openedStore) Destruct() error {
	s.meter.Close()
	return s.Close()
}

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
		meter := accounting.NewMeter(db, usageFlushInterval, a.logger.Named("meter"))
		return openedStore{Badger: db, traced: &tracedStore{Store: db, backend: "badger"}, meter: meter, rates: new(accounting.Rates)}, nil
	})
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	opened := val.(openedStore)
	a.store, a.storeKey, a.opened = opened.traced, key, opened
	a.accountant = &accounting.Accountant{Store: opened.traced, Meter: opened.meter, Rates: opened.rates, RefundUnsuccessful: a.RefundUnsuccessfulTasks}
	return nil
}

// Interface guards
var _ caddy.Destructor = openedStore{}
