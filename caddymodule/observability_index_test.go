package caddymodule

import (
	"context"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// A report that reads an index number between Mark's two writes claims it empty; Mark must then
// fail, so that the pair is marked again rather than missing from that day's reports.
func TestUsageIndexMarkLosingItsNumberFails(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	x := usageIndex{store: store}
	// The report's read of number 1, before Mark names it.
	if _, err := store.SettingOnce(ctx, usageIndexCounter("2026-11-22")+"/1", []byte{}); err != nil {
		t.Fatal(err)
	}
	if err := x.Mark(ctx, "2026-11-22", "acme\x00m"); err == nil {
		t.Fatal("Mark succeeded on a number a report had claimed empty")
	}
	if err := x.Mark(ctx, "2026-11-22", "acme\x00m"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	if err := x.Marked(ctx, "2026-11-22", func(k string) { seen = append(seen, k) }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "acme\x00m" {
		t.Fatalf("indexed %q", seen)
	}
}
