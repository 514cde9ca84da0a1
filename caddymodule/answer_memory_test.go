package caddymodule

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestAnswerBudgetOutlivesReloads: the configs loaded at once (a reload's old and new) share one
// answer budget: the new one's bounds apply, once it starts, to the answers the old one holds,
// and the budget outlives the old config's cleanup. Once no config holds it, the next config
// makes a new one of its own bounds.
func TestAnswerBudgetOutlivesReloads(t *testing.T) {
	old := &App{AnswerMemory: 64 << 20, AnswerMemoryPerAccount: 64 << 20}
	if err := old.acquireAnswerBudget(); err != nil {
		t.Fatal(err)
	}
	old.sizeAnswerBudget()
	held, ok := old.AnswerBudget().Reserve("painters", 40<<20)
	if !ok {
		t.Fatal("a reservation within answer_memory refused")
	}

	reloaded := &App{AnswerMemory: 48 << 20, AnswerMemoryPerAccount: 48 << 20}
	if err := reloaded.acquireAnswerBudget(); err != nil {
		t.Fatal(err)
	}
	budget := reloaded.AnswerBudget()
	if budget != old.AnswerBudget() || budget.Held() != 40<<20 {
		t.Fatalf("the reloaded config has a budget of its own (%d held)", budget.Held())
	}
	reloaded.sizeAnswerBudget()
	if budget.Limit() != 48<<20 || budget.Share() != 48<<20 {
		t.Fatalf("after the new config started: limit %d, share %d", budget.Limit(), budget.Share())
	}
	if _, ok := budget.Reserve("sketchers", 10<<20); ok {
		t.Fatal("the new config reserved 10 MiB while the old one holds 40 of 48")
	}
	if err := old.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if reloaded.AnswerBudget().Held() != 40<<20 {
		t.Fatal("the old config's cleanup dropped the answers it still holds")
	}
	held.Release()
	room, ok := budget.Reserve("sketchers", 10<<20)
	if !ok {
		t.Fatal("room given back by the old config's answer is not the new config's")
	}
	room.Release()
	if err := reloaded.Cleanup(); err != nil {
		t.Fatal(err)
	}

	next := &App{AnswerMemory: 32 << 20}
	if err := next.acquireAnswerBudget(); err != nil {
		t.Fatal(err)
	}
	defer next.Cleanup()
	if next.AnswerBudget() == budget || next.AnswerBudget().Limit() != 32<<20 || next.AnswerBudget().Share() != 8<<20 {
		t.Fatalf("a config loaded after all others let go: the old budget, or limit %d share %d", next.AnswerBudget().Limit(), next.AnswerBudget().Share())
	}
}

// TestAnswerMemoryPerAccountBounds: answer_memory_per_account reads a size into the app, which
// refuses one past answer_memory (its default, 256 MiB, when unset) or below 0.
func TestAnswerMemoryPerAccountBounds(t *testing.T) {
	var a App
	if err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("mediagw {\n\tanswer_memory 128MiB\n\tanswer_memory_per_account 32MiB\n}")); err != nil || a.AnswerMemoryPerAccount != 32<<20 || a.Validate() != nil {
		t.Fatalf("answer_memory_per_account 32MiB: %d, %v, %v", a.AnswerMemoryPerAccount, err, a.Validate())
	}
	for _, c := range []struct {
		app App
		ok  bool
	}{
		{App{AnswerMemoryPerAccount: 256 << 20}, true},
		{App{AnswerMemoryPerAccount: 256<<20 + 1}, false},
		{App{AnswerMemory: 64 << 20, AnswerMemoryPerAccount: 64 << 20}, true},
		{App{AnswerMemory: 64 << 20, AnswerMemoryPerAccount: 64<<20 + 1}, false},
		{App{AnswerMemoryPerAccount: -1}, false},
	} {
		if err := c.app.Validate(); (err == nil) != c.ok {
			t.Errorf("answer_memory %d, per account %d: %v", c.app.AnswerMemory, c.app.AnswerMemoryPerAccount, err)
		}
	}
}
