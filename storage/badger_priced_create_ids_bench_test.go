package storage

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkBadgerPricedCreateIDs is BenchmarkBadgerPricedCreate with the ids a gateway makes
// instead of counted ones: each hold id "hold_" and 24 hex digits of random bytes, as
// accounting's newHoldID makes it, and each task id as the bench's simulator makes it (the
// second, then 8 random characters). With them a create cost 7-15 µs more CPU than with counted
// ids in every round of session 24 (bench/README.md): figures of the counted benchmarks
// understate a gateway's. The sub-benchmark time-ordered makes each hold id's first 8 of its 12
// bytes the creates' order, the rest random; it was no cheaper than random (the hold id's place
// in Badger's memtable is not what costs).
//
//	go test ./storage/ -run '^$' -bench BadgerPricedCreateIDs -benchtime 40000x -cpu 1
func BenchmarkBadgerPricedCreateIDs(b *testing.B) {
	for _, order := range []string{"random", "time-ordered"} {
		b.Run(order, func(b *testing.B) {
			ctx := context.Background()
			s := openCreditedBench(b)
			parallelOps(b, s, func(i int64) error {
				if _, ok, err := s.ReserveCounter(ctx, "active/key_1", 1, -1); err != nil || !ok {
					return fmt.Errorf("reserving a slot: %v, %v", ok, err)
				}
				var raw [12]byte
				_, _ = rand.Read(raw[:])
				if order == "time-ordered" {
					binary.BigEndian.PutUint64(raw[:8], uint64(i))
				}
				now := time.Now()
				holdID := holdIDPrefix + hex.EncodeToString(raw[:])
				taskID := "cgt-" + now.UTC().Format("20060102150405") + "-" + strings.ToLower(rand.Text()[:8])
				return createWithIDs(ctx, s, holdID, taskID, now)
			})
		})
	}
}

// createWithIDs is heldCreate with the hold and task ids given.
func createWithIDs(ctx context.Context, s *Badger, holdID, taskID string, now time.Time) error {
	hold := Hold{ID: holdID, NewID: true, Account: "bench", KeyID: "key_1", Model: "bench-video",
		Amount: 200_000, Deadline: now.Add(DefaultHoldDeadline), Transient: true}
	if _, _, err := s.Hold(ctx, hold, now); err != nil {
		return err
	}
	task := Task{ID: taskID, Kind: KindVideo, Account: "bench", KeyID: "key_1",
		Provider: "sim", Model: "bench-video", Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(),
		ExpiresAt: now.Add(time.Hour).Unix(), HoldID: hold.ID, HoldAmount: hold.Amount, Active: true}
	if _, err := s.CreateTask(ctx, task); err != nil {
		return err
	}
	return s.BindHold(ctx, hold.ID, task.ID)
}
