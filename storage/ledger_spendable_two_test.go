package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// TestSpendableAcrossTwoProcesses: a transient hold taken and over-settled through one
// Redis client is seen at once by Spendable through another: at exactly 0 and within the
// budget while held, below zero and past the budget once charged over it.
func TestSpendableAcrossTwoProcesses(t *testing.T) {
	a, b := twoProcesses(t, "spendable-two")
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	daily := storage.Budget{Limit: 1_000_000, Period: storage.BudgetDay}
	if _, err := a.Credit(ctx, storage.Credit{Account: "team", Amount: 1_000_000, IdempotencyKey: "c"}, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Hold(ctx, storage.Hold{ID: "h", Account: "team", KeyID: "k", Amount: 1_000_000, Budget: daily, Transient: true, Deadline: now.Add(time.Minute)}, now); err != nil {
		t.Fatal(err)
	}
	if err := b.Spendable(ctx, "team", "k", daily, now); err != nil {
		t.Fatalf("at exactly 0, budget used exactly: %v", err)
	}
	if _, err := a.Settle(ctx, "h", 1_500_000, now); err != nil {
		t.Fatal(err)
	}
	if err := b.Spendable(ctx, "team", "k", storage.Budget{}, now); !errors.Is(err, storage.ErrInsufficient) {
		t.Fatalf("overdrawn through the other process: %v", err)
	}
	if _, err := b.Credit(ctx, storage.Credit{Account: "team", Amount: 500_000, IdempotencyKey: "c2"}, now); err != nil {
		t.Fatal(err)
	}
	if err := a.Spendable(ctx, "team", "k", daily, now); !errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("past the budget through the other process: %v", err)
	}
	if err := a.Spendable(ctx, "team", "k", storage.Budget{}, now); err != nil {
		t.Fatalf("topped up to 0: %v", err)
	}
}
