package storage

import (
	"context"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// TestMigrateLegacyRecords opens a store written by an earlier version: its webhook secret,
// pending callbacks and relay tokens are kept.
func TestMigrateLegacyRecords(t *testing.T) {
	dir := t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error {
		for k, v := range map[string]string{
			"r/config/webhook-secret": "whsec_old",
			"r/outbox/msg_1":          `{"id":"msg_1","task_id":"cgt-1","account":"a","url":"https://x/","body":{},"attempts":2,"next_at":5,"created_at":1}`,
			"r/relay/abc":             "cgt-1",
			"r/finished/cgt-1":        "\x01",
		} {
			if err := txn.Set([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if v, err := b.SettingOnce(ctx, "webhook-secret", []byte("new")); err != nil || string(v) != "whsec_old" {
		t.Fatalf("webhook secret = %q, %v", v, err)
	}
	evs, err := b.ClaimDueEvents(ctx, time.Unix(0, 10), 10, time.Minute)
	if err != nil || len(evs) != 1 || evs[0].Attempts != 2 || evs[0].TaskID != "cgt-1" {
		t.Fatalf("migrated events = %+v, %v", evs, err)
	}
	if id, err := b.RelayTask(ctx, "abc"); err != nil || id != "cgt-1" {
		t.Fatalf("relay token = %q, %v", id, err)
	}
}
