package storage_test

import (
	"testing"

	"github.com/mediagw/mediagw/storage"
	"github.com/mediagw/mediagw/storage/storetest"
)

func TestBadgerConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		NewLocation: func(t *testing.T) string { return t.TempDir() },
		Open: func(t *testing.T, dir string) storage.Store {
			t.Helper()
			s, err := storage.OpenBadger(dir, storage.BadgerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}
