package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// TestRedisSlotClaims: a claim takes a slot within the counter's limit; it ends once, by its
// release (which gives the slot back) or by its task's create (whose record then keeps the
// slot); a create whose claim the reconciler released first is written without Active, and a
// release racing the create ends it once. Overdue claims are listed earliest first.
func TestRedisSlotClaims(t *testing.T) {
	server := testredis.Start(t, testredis.Options{})
	s := openRedis(t, redisLocation(server.URL(), "claims"))
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	claim := func(id string, deadline time.Duration) storage.SlotClaim {
		return storage.SlotClaim{ID: id, Counter: "active/k1", Deadline: now.Add(deadline)}
	}
	count := func() int64 {
		t.Helper()
		n, err := s.Counter(ctx, "active/k1")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	task := func(id string, _ storage.SlotClaim) storage.Task {
		return storage.Task{ID: id, Kind: storage.KindVideo, Account: "acme", KeyID: "k1", Status: "queued",
			CreatedAt: now.Unix(), Active: true}
	}

	a, b := claim("a", time.Minute), claim("b", 2*time.Minute)
	for _, c := range []storage.SlotClaim{a, b} {
		if ok, err := s.ClaimSlot(ctx, c, 2); err != nil || !ok {
			t.Fatalf("ClaimSlot(%s) = %v, %v", c.ID, ok, err)
		}
	}
	if ok, err := s.ClaimSlot(ctx, claim("c", time.Minute), 2); err != nil || ok {
		t.Fatalf("a claim past the limit = %v, %v; want refused", ok, err)
	}
	if ids, err := s.OverdueClaims(ctx, now.Add(3*time.Minute), 10); err != nil || fmt.Sprint(ids) != "[a b]" {
		t.Fatalf("OverdueClaims = %v, %v; want [a b]", ids, err)
	}
	if ids, err := s.OverdueClaims(ctx, now.Add(90*time.Second), 10); err != nil || fmt.Sprint(ids) != "[a]" {
		t.Fatalf("OverdueClaims before b's deadline = %v, %v; want [a]", ids, err)
	}

	// a's task's record keeps its slot: the claim ends, and a release gives nothing back.
	stored, err := s.CreateClaimedTask(ctx, task("task-a", a), a)
	if err != nil || !stored.Active {
		t.Fatalf("the create of a's task = %+v, %v; want it keeping the slot", stored, err)
	}
	if got, err := s.Task(ctx, "task-a"); err != nil || !got.Active {
		t.Fatalf("a's task's record = %+v, %v", got, err)
	}
	if ok, err := s.ReleaseClaim(ctx, "a"); err != nil || ok || count() != 2 {
		t.Fatalf("releasing a kept claim = %v, %v (count %d); want nothing given back", ok, err, count())
	}
	if _, err := s.CreateClaimedTask(ctx, task("task-a", a), a); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("a second create of task-a = %v; want ErrExists", err)
	}

	// b's claim is released by the reconciler, once; then its task's create keeps no slot.
	if ok, err := s.ReleaseClaim(ctx, "b"); err != nil || !ok || count() != 1 {
		t.Fatalf("releasing b = %v, %v (count %d); want its slot back", ok, err, count())
	}
	if ok, err := s.ReleaseClaim(ctx, "b"); err != nil || ok || count() != 1 {
		t.Fatalf("releasing b again = %v, %v (count %d); want nothing", ok, err, count())
	}
	stored, err = s.CreateClaimedTask(ctx, task("task-b", b), b)
	if err != nil || stored.Active {
		t.Fatalf("the create of b's task after its claim was released = %+v, %v; want no slot kept", stored, err)
	}
	if got, err := s.Task(ctx, "task-b"); err != nil || got.Active {
		t.Fatalf("b's task's record = %+v, %v; want no slot kept", got, err)
	}

	// Creates racing the reconciler's release: each slot goes back once or is kept, never both.
	const n = 30
	for i := range n {
		if ok, err := s.ClaimSlot(ctx, claim(fmt.Sprint("r", i), time.Minute), -1); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	var wg sync.WaitGroup
	var kept [n]bool
	var released [n]bool
	for i := range n {
		c := claim(fmt.Sprint("r", i), time.Minute)
		wg.Go(func() {
			st, err := s.CreateClaimedTask(ctx, task("task-"+c.ID, c), c)
			if err != nil {
				t.Error(err)
			}
			kept[i] = st.Active
		})
		wg.Go(func() {
			ok, err := s.ReleaseClaim(ctx, c.ID)
			if err != nil {
				t.Error(err)
			}
			released[i] = ok
		})
	}
	wg.Wait()
	keptN := int64(0)
	for i := range n {
		if kept[i] == released[i] {
			t.Fatalf("claim r%d: kept %v, released %v; want exactly one", i, kept[i], released[i])
		}
		if kept[i] {
			keptN++
		}
	}
	if got := count(); got != 1+keptN {
		t.Fatalf("count = %d; want task-a's slot and the %d kept", got, keptN)
	}
}
