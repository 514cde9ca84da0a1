package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// deliveriesAt is the tests' clock for delivery records: a fixed instant.
var deliveriesAt = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// testDeliveries: a task keeps its newest MaxDeliveries records, oldest first; tasks do not
// share records; a task without any has none.
func testDeliveries(t *testing.T, s storage.Store) {
	ctx := context.Background()
	total := storage.MaxDeliveries + 5
	for i := range total {
		d := storage.Delivery{TaskID: "t1", EventID: "ev-running", Status: "running", Attempt: i + 1,
			At: deliveriesAt.Add(time.Duration(i) * time.Second).UnixNano(), Outcome: "retry", HTTPStatus: 503}
		if err := s.RecordDelivery(ctx, d, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordDelivery(ctx, storage.Delivery{TaskID: "t2", EventID: "ev-done", Attempt: 1, At: deliveriesAt.UnixNano(), Outcome: "delivered", HTTPStatus: 204}, time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := s.TaskDeliveries(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != storage.MaxDeliveries || got[0].Attempt != total-storage.MaxDeliveries+1 || got[len(got)-1].Attempt != total {
		t.Fatalf("t1 keeps %d records, attempts %d to %d; want %d, %d to %d", len(got), first(got).Attempt, last(got).Attempt,
			storage.MaxDeliveries, total-storage.MaxDeliveries+1, total)
	}
	if got[0].HTTPStatus != 503 || got[0].Outcome != "retry" || got[0].Status != "running" || got[0].EventID != "ev-running" {
		t.Fatalf("a record came back as %+v", got[0])
	}
	if got, err := s.TaskDeliveries(ctx, "t2"); err != nil || len(got) != 1 || got[0].Outcome != "delivered" {
		t.Fatalf("t2's records = %+v, %v", got, err)
	}
	if got, err := s.TaskDeliveries(ctx, "t3"); err != nil || len(got) != 0 {
		t.Fatalf("a task without deliveries has %+v, %v", got, err)
	}
}

func first(l []storage.Delivery) storage.Delivery {
	if len(l) == 0 {
		return storage.Delivery{}
	}
	return l[0]
}

func last(l []storage.Delivery) storage.Delivery {
	if len(l) == 0 {
		return storage.Delivery{}
	}
	return l[len(l)-1]
}

// testDeliveriesRace: two writers recording at once leave exactly MaxDeliveries records.
func testDeliveriesRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 2*storage.MaxDeliveries)
	for w := range 2 {
		wg.Go(func() {
			for i := range storage.MaxDeliveries {
				d := storage.Delivery{TaskID: "race", EventID: fmt.Sprint("ev", w), Attempt: i + 1,
					At: deliveriesAt.Add(time.Duration(i)*time.Second + time.Duration(w)).UnixNano(), Outcome: "retry"}
				if err := s.RecordDelivery(ctx, d, time.Hour); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, err := s.TaskDeliveries(ctx, "race"); err != nil || len(got) != storage.MaxDeliveries {
		t.Fatalf("after two writers the task keeps %d records, %v; want %d", len(got), err, storage.MaxDeliveries)
	}
}
