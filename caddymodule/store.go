package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/storage"
)

// stores holds one open store per identity (for Badger, per directory). Badger locks its
// directory, and during a reload the old and the new config both use the store, so it is opened
// by the first config that needs it and closed when the last one lets go.
var stores = caddy.NewUsagePool()

// usageFlushInterval is how often request and task counts are written to the store.
const usageFlushInterval = 2 * time.Second

// openedStore is a store and what lives as long as it: the usage meter that writes to it, and the
// traced view of it that handlers use (one per store, so that handlers of the old and the new
// config during a reload share it).
type openedStore struct {
	store  storage.Store
	traced *tracedStore
	meter  *accounting.Meter
}

// Destruct flushes the meter and closes the store, when the last config lets go of it.
func (s openedStore) Destruct() error {
	s.meter.Close()
	return s.store.Close()
}

// openStore loads the storage module and acquires its store from the pool.
func (a *App) openStore(ctx caddy.Context) error {
	if len(a.StorageRaw) == 0 {
		a.StorageRaw = json.RawMessage(`{"module":"badger"}`)
	}
	a.StorageRaw = legacyStorageConfig(a.StorageRaw)
	mod, err := ctx.LoadModule(a, "StorageRaw")
	if err != nil {
		return fmt.Errorf("loading storage module: %v", err)
	}
	backend, ok := mod.(StoreBackend)
	if !ok {
		return fmt.Errorf("storage module %T cannot open a store", mod)
	}
	key, err := backend.StoreIdentity()
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	val, _, err := stores.LoadOrNew(key, func() (caddy.Destructor, error) {
		s, err := backend.OpenStore(a.logger.Named("storage"))
		if err != nil {
			return nil, err
		}
		if err := a.recountSlots(s); err != nil {
			s.Close()
			return nil, err
		}
		meter := accounting.NewMeter(s, usageFlushInterval, a.logger.Named("meter"))
		return openedStore{store: s, traced: &tracedStore{Store: s, backend: backendName(key)}, meter: meter}, nil
	})
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	opened := val.(openedStore)
	a.store, a.storeKey, a.opened = opened.traced, key, opened
	a.accountant = &accounting.Accountant{Store: opened.traced, Meter: opened.meter,
		Prices: a.prices, Logger: a.logger.Named("accounting")}
	if claims, ok := opened.store.(storage.SlotClaims); ok {
		a.accountant.Claims = claims // a shared store: free creates' slots are claims
	}
	return nil
}

// backendName is the backend part of a store identity ("badger" of "badger:/var/lib/…").
func backendName(identity string) string {
	name, _, _ := strings.Cut(identity, ":")
	return name
}

// legacyStorageConfig turns the storage setting of earlier versions, {"backend": "badger",
// "path": …}, into the module form {"module": "badger", "path": …}; anything else is returned as is.
func legacyStorageConfig(raw json.RawMessage) json.RawMessage {
	var old map[string]json.RawMessage
	if json.Unmarshal(raw, &old) != nil || old["module"] != nil || old["backend"] == nil {
		return raw
	}
	old["module"] = old["backend"]
	delete(old, "backend")
	b, err := json.Marshal(old)
	if err != nil {
		return raw
	}
	return b
}

// Interface guards
var _ caddy.Destructor = openedStore{}

// slotRecounter is a store that serves one process (Badger): the moment it is opened, no create
// is in flight, and its active-task slot counters can be set to what the task records hold.
type slotRecounter interface {
	RecountSlots(ctx context.Context, counterPrefix string) (map[string]int64, error)
}

// recountSlots gives back, when a one-process store is opened, the active-task slots that no
// task record holds: those of creates that a crash (kill -9) ended between taking the slot and
// writing the task's record, and those of tasks whose finish was written but not the slot's
// give-back; a store shared by processes (Redis) is left alone.
func (a *App) recountSlots(s storage.Store) error {
	r, ok := s.(slotRecounter)
	if !ok {
		return nil
	}
	changed, err := r.RecountSlots(context.Background(), accounting.ActiveCounter(""))
	if err != nil {
		return fmt.Errorf("recounting the active-task slots: %w", err)
	}
	for name, delta := range changed {
		a.logger.Warn("an active-task slot counter did not match the task records (a crash between a slot and its record); set to the records' count",
			zap.String("counter", name), zap.Int64("delta", delta))
	}
	return nil
}
