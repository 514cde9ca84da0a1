package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testItemClaims: a claim records the unowned ids of a batch for the account, keeps the owner of
// every owned one, and reports those another account owns.
func testItemClaims(t *testing.T, s storage.Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	if owners, err := s.ItemOwners(ctx, []string{"msg_1"}); err != nil || !slices.Equal(owners, []string{""}) {
		t.Fatalf("owner of an unclaimed id = %q, %v, want none", owners, err)
	}
	if taken, err := s.ClaimItems(ctx, "alice", []string{"msg_1", "rs_1"}, exp); err != nil || taken != nil {
		t.Fatalf("first claim = %q, %v", taken, err)
	}
	// Claiming again what the account owns is no error, and takes nothing.
	if taken, err := s.ClaimItems(ctx, "alice", []string{"rs_1", "msg_1"}, exp); err != nil || taken != nil {
		t.Fatalf("second claim by the owner = %q, %v", taken, err)
	}
	// Another account gets the new ids of its batch, never the owned ones.
	taken, err := s.ClaimItems(ctx, "mallory", []string{"fc_1", "rs_1", "msg_2", "msg_1"}, exp)
	if err != nil || !slices.Equal(taken, []string{"rs_1", "msg_1"}) {
		t.Fatalf("claim of owned ids by another account = %q, %v; want rs_1, msg_1", taken, err)
	}
	owners, err := s.ItemOwners(ctx, []string{"msg_1", "rs_1", "fc_1", "unknown", "msg_2", "msg_1"})
	if want := []string{"alice", "alice", "mallory", "", "mallory", "alice"}; err != nil || !slices.Equal(owners, want) {
		t.Fatalf("owners = %q, %v; want %q", owners, err, want)
	}
	if owners, err := s.ItemOwners(ctx, nil); err != nil || len(owners) != 0 {
		t.Fatalf("owners of no ids = %q, %v", owners, err)
	}
	if taken, err := s.ClaimItems(ctx, "alice", nil, exp); err != nil || taken != nil {
		t.Fatalf("empty claim = %q, %v", taken, err)
	}
	if _, err := s.ClaimItems(ctx, "alice", make([]string, storage.MaxItemClaim+1), exp); err == nil {
		t.Fatal("a claim past MaxItemClaim was accepted")
	}
	// A batch at the bound is one write.
	big := make([]string, storage.MaxItemClaim)
	for i := range big {
		big[i] = fmt.Sprintf("item_%04d", i)
	}
	if taken, err := s.ClaimItems(ctx, "bob", big, exp); err != nil || taken != nil {
		t.Fatalf("claim of %d ids = %d taken, %v", len(big), len(taken), err)
	}
	owners, err = s.ItemOwners(ctx, big)
	if err != nil || owners[0] != "bob" || owners[len(big)-1] != "bob" {
		t.Fatalf("owners of a full batch: %v", err)
	}
}

// testItemClaimRace: of many accounts claiming the same batch at once, one owns all of it.
func testItemClaimRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	ids := []string{"rs_race", "msg_race", "fc_race"}
	wins := winners(t, 20, func(i int) (bool, error) {
		taken, err := s.ClaimItems(ctx, fmt.Sprint("acct", i), ids, time.Now().Add(time.Hour))
		if err != nil {
			return false, err
		}
		if len(taken) != 0 && len(taken) != len(ids) {
			return false, fmt.Errorf("a claim took part of a batch: %q taken by others", taken)
		}
		return len(taken) == 0, nil
	})
	if wins != 1 {
		t.Fatalf("%d concurrent claims of one batch won, want 1", wins)
	}
	owners, err := s.ItemOwners(ctx, ids)
	if err != nil || owners[0] == "" || owners[1] != owners[0] || owners[2] != owners[0] {
		t.Fatalf("owners of the raced batch = %q, %v; want one account", owners, err)
	}
}
