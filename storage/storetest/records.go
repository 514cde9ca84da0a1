package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

func testIdempotency(t *testing.T, s storage.Store) {
	ctx := context.Background()
	first := storage.IdempotencyRecord{Owner: "o1", InFlight: true, RequestHash: "h1"}
	got, began, err := s.BeginIdempotent(ctx, "acct/k1", first, time.Hour)
	if err != nil || !began || got.Owner != "o1" {
		t.Fatalf("first Begin = %+v, %v, %v", got, began, err)
	}
	got, began, err = s.BeginIdempotent(ctx, "acct/k1", storage.IdempotencyRecord{Owner: "o2", InFlight: true, RequestHash: "h2"}, time.Hour)
	if err != nil || began || got.Owner != "o1" || !got.InFlight || got.RequestHash != "h1" {
		t.Fatalf("second Begin = %+v, %v, %v; want the first, in flight", got, began, err)
	}
	// Only the owner completes or abandons.
	if err := s.CompleteIdempotent(ctx, "acct/k1", storage.IdempotencyRecord{Owner: "o2", RequestHash: "h2", Status: 200}, time.Hour); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Complete by another owner = %v, want ErrConflict", err)
	}
	if err := s.AbandonIdempotent(ctx, "acct/k1", "o2"); err != nil {
		t.Fatal(err)
	}
	done := storage.IdempotencyRecord{Owner: "o1", RequestHash: "h1", Status: 200, ContentType: "application/json", Body: []byte(`{"id":"x"}`)}
	if err := s.CompleteIdempotent(ctx, "acct/k1", done, time.Hour); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got, began, err = s.BeginIdempotent(ctx, "acct/k1", storage.IdempotencyRecord{Owner: "o3", InFlight: true, RequestHash: "h1"}, time.Hour)
	if err != nil || began || got.InFlight || got.Status != 200 || string(got.Body) != `{"id":"x"}` {
		t.Fatalf("Begin after Complete = %+v, %v, %v; want the kept answer", got, began, err)
	}
	// A completed record is not abandoned, and cannot be completed again.
	if err := s.AbandonIdempotent(ctx, "acct/k1", "o1"); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteIdempotent(ctx, "acct/k1", done, time.Hour); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("second Complete = %v, want ErrConflict", err)
	}
	if _, began, _ := s.BeginIdempotent(ctx, "acct/k1", first, time.Hour); began {
		t.Fatal("a completed record was abandoned")
	}
	// The owner's abandon frees the key.
	if _, _, err := s.BeginIdempotent(ctx, "acct/k2", first, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.AbandonIdempotent(ctx, "acct/k2", "o1"); err != nil {
		t.Fatal(err)
	}
	if _, began, err := s.BeginIdempotent(ctx, "acct/k2", first, time.Hour); err != nil || !began {
		t.Fatalf("Begin after Abandon = %v, %v", began, err)
	}
	// The largest answer kept comes back whole; a spent key without its answer says so.
	large := bytes.Repeat([]byte("iVBORw0K"), storage.MaxIdempotentAnswer/8)
	for key, rec := range map[string]storage.IdempotencyRecord{
		"acct/large":  {Owner: "o1", RequestHash: "h1", Status: 200, ContentType: "application/json", Body: large},
		"acct/unkept": {Owner: "o1", RequestHash: "h1", Status: 409, ContentType: "application/json", Body: []byte(`{"error":{"code":"idempotency_answer_not_kept"}}`), Unkept: true},
	} {
		if _, _, err := s.BeginIdempotent(ctx, key, first, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteIdempotent(ctx, key, rec, time.Hour); err != nil {
			t.Fatalf("Complete %s: %v", key, err)
		}
		got, began, err := s.BeginIdempotent(ctx, key, storage.IdempotencyRecord{Owner: "o3", InFlight: true, RequestHash: "h1"}, time.Hour)
		if err != nil || began || got.InFlight || got.Status != rec.Status || got.Unkept != rec.Unkept || !bytes.Equal(got.Body, rec.Body) {
			t.Fatalf("%s kept as status %d, %d bytes, unkept %v, in flight %v (%v, %v); want status %d, %d bytes, unkept %v",
				key, got.Status, len(got.Body), got.Unkept, got.InFlight, began, err, rec.Status, len(rec.Body), rec.Unkept)
		}
	}
}

func testIdempotencyRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	began := winners(t, 30, func(i int) (bool, error) {
		_, ok, err := s.BeginIdempotent(ctx, "acct/race", storage.IdempotencyRecord{Owner: fmt.Sprint(i), InFlight: true}, time.Hour)
		return ok, err
	})
	if began != 1 {
		t.Fatalf("%d requests began with one key, want 1", began)
	}
}

func testIdempotencyExpires(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, _, err := s.BeginIdempotent(ctx, "acct/ttl", storage.IdempotencyRecord{Owner: "dead", InFlight: true}, time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() bool {
		_, began, err := s.BeginIdempotent(ctx, "acct/ttl", storage.IdempotencyRecord{Owner: "next", InFlight: true}, time.Hour)
		return err == nil && began
	}, "an in-flight record outlived its TTL")
}

// testIdempotencyLease: a renewed lease outlives its first TTL; a lease that ran out and was taken
// by a retry is neither renewed back nor completed over by its old owner.
func testIdempotencyLease(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, began, err := s.BeginIdempotent(ctx, "acct/lease", storage.IdempotencyRecord{Owner: "a", InFlight: true, RequestHash: "h"}, time.Second); err != nil || !began {
		t.Fatalf("BeginIdempotent = %v, %v", began, err)
	}
	if err := s.RenewIdempotent(ctx, "acct/lease", "a", time.Hour); err != nil {
		t.Fatalf("renewing a held lease: %v", err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, began, err := s.BeginIdempotent(ctx, "acct/lease", storage.IdempotencyRecord{Owner: "b", InFlight: true, RequestHash: "h"}, time.Hour); err != nil || began {
		t.Fatalf("a retry took a renewed lease: began %v, %v", began, err)
	}
	if err := s.RenewIdempotent(ctx, "acct/lease", "b", time.Hour); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a non-owner renewed a lease: %v, want ErrConflict", err)
	}

	if _, _, err := s.BeginIdempotent(ctx, "acct/lost", storage.IdempotencyRecord{Owner: "old", InFlight: true, RequestHash: "h"}, time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() bool {
		_, began, err := s.BeginIdempotent(ctx, "acct/lost", storage.IdempotencyRecord{Owner: "new", InFlight: true, RequestHash: "h"}, time.Hour)
		return err == nil && began
	}, "an unrenewed lease outlived its TTL")
	if err := s.RenewIdempotent(ctx, "acct/lost", "old", time.Hour); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("the old owner renewed a lost lease: %v, want ErrConflict", err)
	}
	if err := s.CompleteIdempotent(ctx, "acct/lost", storage.IdempotencyRecord{Owner: "old", RequestHash: "h", Status: 200}, time.Hour); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("the old owner completed over the new owner: %v, want ErrConflict", err)
	}
	if err := s.CompleteIdempotent(ctx, "acct/lost", storage.IdempotencyRecord{Owner: "new", RequestHash: "h", Status: 201}, time.Hour); err != nil {
		t.Fatalf("the new owner completing: %v", err)
	}
	if err := s.RenewIdempotent(ctx, "acct/lost", "new", time.Hour); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a completed record was renewed as in flight: %v, want ErrConflict", err)
	}
}

func event(id string, due time.Time) storage.Event {
	return storage.Event{ID: id, TaskID: "task-" + id, Account: "alice", URL: "https://example.com/cb", Host: "example.com",
		Body: []byte(`{"id":"` + id + `"}`), DueAt: due.UnixNano(), CreatedAt: due.UnixNano()}
}

func testOutboxDueOrder(t *testing.T, s storage.Store) {
	ctx := context.Background()
	base := time.Unix(1_800_000_000, 0)
	if _, ok, err := s.NextEventDue(ctx); err != nil || ok {
		t.Fatalf("NextEventDue of an empty outbox = %v, %v", ok, err)
	}
	for i, off := range []time.Duration{3 * time.Second, time.Second, time.Hour, 2 * time.Second} {
		stored, err := s.EnqueueEvent(ctx, event(fmt.Sprint("ev", i), base.Add(off)))
		if err != nil || !stored {
			t.Fatalf("Enqueue: %v, %v", stored, err)
		}
	}
	if stored, err := s.EnqueueEvent(ctx, event("ev0", base)); err != nil || stored {
		t.Fatalf("second Enqueue of one id = %v, %v; want not stored", stored, err)
	}
	if n, err := s.PendingEvents(ctx); err != nil || n != 4 {
		t.Fatalf("PendingEvents = %d, %v", n, err)
	}
	if due, ok, err := s.NextEventDue(ctx); err != nil || !ok || !due.Equal(base.Add(time.Second)) {
		t.Fatalf("NextEventDue = %v, %v, %v", due, ok, err)
	}
	none, err := s.ClaimDueEvents(ctx, base, 10, time.Minute)
	if err != nil || len(none) != 0 {
		t.Fatalf("claimed %d events before any was due (%v)", len(none), err)
	}
	got, err := s.ClaimDueEvents(ctx, base.Add(5*time.Second), 2, time.Minute)
	if err != nil || len(got) != 2 || got[0].ID != "ev1" || got[1].ID != "ev3" {
		t.Fatalf("claimed %+v, %v; want ev1 then ev3 (earliest due first, limit 2)", got, err)
	}
	if got[0].Claim == "" || got[0].Claim == got[1].Claim {
		t.Fatalf("claim tokens %q %q", got[0].Claim, got[1].Claim)
	}
	if string(got[0].Body) != `{"id":"ev1"}` || got[0].Host != "example.com" {
		t.Fatalf("claimed event lost its fields: %+v", got[0])
	}
	// Ack and reschedule need the claim.
	if err := s.AckEvent(ctx, "ev1", "wrong"); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("Ack with a wrong claim = %v, want ErrLeaseLost", err)
	}
	if err := s.AckEvent(ctx, "ev1", got[0].Claim); err != nil {
		t.Fatal(err)
	}
	if err := s.AckEvent(ctx, "ev1", got[0].Claim); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("second Ack = %v, want ErrLeaseLost", err)
	}
	ev3 := got[1]
	ev3.Attempts, ev3.DueAt = 1, base.Add(10*time.Second).UnixNano()
	if err := s.RescheduleEvent(ctx, ev3, ev3.Claim); err != nil {
		t.Fatal(err)
	}
	got, err = s.ClaimDueEvents(ctx, base.Add(5*time.Second), 10, time.Minute)
	if err != nil || len(got) != 1 || got[0].ID != "ev0" {
		t.Fatalf("claimed %+v, %v; want only ev0", got, err)
	}
	got, err = s.ClaimDueEvents(ctx, base.Add(11*time.Second), 10, time.Minute)
	if err != nil || len(got) != 1 || got[0].ID != "ev3" || got[0].Attempts != 1 {
		t.Fatalf("claimed %+v, %v; want the rescheduled ev3 with 1 attempt", got, err)
	}
	if n, err := s.PendingEvents(ctx); err != nil || n != 3 {
		t.Fatalf("PendingEvents = %d, %v; want 3", n, err)
	}
}

// testOutboxTwoClaimers: concurrent claimers never get one event twice.
func testOutboxTwoClaimers(t *testing.T, s storage.Store) {
	ctx := context.Background()
	base := time.Unix(1_800_000_000, 0)
	const n = 60
	for i := range n {
		if _, err := s.EnqueueEvent(ctx, event(fmt.Sprintf("race%03d", i), base)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, err := s.ClaimDueEvents(ctx, base.Add(time.Second), 7, time.Hour)
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				mu.Lock()
				for _, ev := range got {
					seen[ev.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d distinct events, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("event %s claimed %d times", id, c)
		}
	}
}

func testOutboxLeaseExpiry(t *testing.T, s storage.Store) {
	ctx := context.Background()
	base := time.Unix(1_800_000_000, 0)
	if _, err := s.EnqueueEvent(ctx, event("lease", base)); err != nil {
		t.Fatal(err)
	}
	first, err := s.ClaimDueEvents(ctx, base, 1, 30*time.Second)
	if err != nil || len(first) != 1 {
		t.Fatalf("claim = %v, %v", first, err)
	}
	if again, _ := s.ClaimDueEvents(ctx, base.Add(29*time.Second), 1, 30*time.Second); len(again) != 0 {
		t.Fatal("an event was claimed again while its lease ran")
	}
	// The worker died: after the lease the event is due again, and the old claim is void.
	second, err := s.ClaimDueEvents(ctx, base.Add(31*time.Second), 1, 30*time.Second)
	if err != nil || len(second) != 1 || second[0].Claim == first[0].Claim {
		t.Fatalf("claim after the lease = %+v, %v", second, err)
	}
	if err := s.AckEvent(ctx, "lease", first[0].Claim); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("Ack with an expired claim = %v, want ErrLeaseLost", err)
	}
	if err := s.RescheduleEvent(ctx, first[0], first[0].Claim); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("Reschedule with an expired claim = %v, want ErrLeaseLost", err)
	}
	if err := s.AckEvent(ctx, "lease", second[0].Claim); err != nil {
		t.Fatal(err)
	}
}
