package caddymodule

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/upstream"
)

// answerBudgets holds the gateway's one answer budget (answer_memory), under answerBudgetKey.
// During a reload the old config's edits and queries still hold answers while the new config's
// begin: both count against the same budget, so the process never holds more than one
// answer_memory, however the reloads overlap. The config that starts last sets its bounds.
var answerBudgets = caddy.NewUsagePool()

const answerBudgetKey = "answer_memory"

// pooledAnswerBudget is the budget as the pool holds it; nothing to close.
type pooledAnswerBudget struct{ *upstream.AnswerBudget }

func (pooledAnswerBudget) Destruct() error { return nil }

// acquireAnswerBudget takes the app's hold on the gateway's answer budget, made with the app's
// bounds when no config holds it.
func (a *App) acquireAnswerBudget() error {
	val, _, err := answerBudgets.LoadOrNew(answerBudgetKey, func() (caddy.Destructor, error) {
		return pooledAnswerBudget{upstream.NewAnswerBudget(a.answerMemory(), a.AnswerMemoryPerAccount)}, nil
	})
	if err != nil {
		return fmt.Errorf("answer_memory: %w", err)
	}
	a.answers = val.(pooledAnswerBudget).AnswerBudget
	return nil
}

// releaseAnswerBudget lets go of the app's hold on the answer budget, if it took one (the app
// holds the budget while it has it).
func (a *App) releaseAnswerBudget() error {
	if a.answers == nil {
		return nil
	}
	a.answers = nil
	_, err := answerBudgets.Delete(answerBudgetKey)
	return err
}

// sizeAnswerBudget gives the gateway's answer budget this config's bounds (at Start).
func (a *App) sizeAnswerBudget() {
	a.unsizeAnswers = a.answers.Resize(a.answerMemory(), a.AnswerMemoryPerAccount)
}

// unsizeAnswerBudget gives the budget back the bounds this config's Start replaced, when they are
// still this config's (at Stop). Caddy starts a config's apps one by one and stops the started
// ones when a later one fails to start: the refused config's bounds must not outlive it, and the
// running config's come back. After a config that started whole, the next config's Start has set
// its own bounds, which stay.
func (a *App) unsizeAnswerBudget() {
	if a.unsizeAnswers != nil {
		a.unsizeAnswers()
		a.unsizeAnswers = nil
	}
}

// answerMemory is AnswerMemory, or its default.
func (a *App) answerMemory() int64 {
	if a.AnswerMemory <= 0 {
		return upstream.DefaultAnswerMemory
	}
	return a.AnswerMemory
}

// answerShare is AnswerMemoryPerAccount, or its default (a quarter of answerMemory).
func (a *App) answerShare() int64 {
	if a.AnswerMemoryPerAccount <= 0 {
		return a.answerMemory() / upstream.DefaultAnswerShareParts
	}
	return a.AnswerMemoryPerAccount
}

// validateAnswerMemory checks answer_memory and answer_memory_per_account.
func (a *App) validateAnswerMemory() error {
	if a.AnswerMemory < 0 || a.AnswerMemory > MaxAnswerMemory {
		return fmt.Errorf("answer_memory %d is outside 0 (the default, 256 MiB) to %d bytes (64 GiB)", a.AnswerMemory, int64(MaxAnswerMemory))
	}
	if a.AnswerMemoryPerAccount < 0 || a.AnswerMemoryPerAccount > a.answerMemory() {
		return fmt.Errorf("answer_memory_per_account %d is outside 0 (the default, a quarter of answer_memory) to answer_memory (%d bytes)", a.AnswerMemoryPerAccount, a.answerMemory())
	}
	return nil
}

// MaxAnswerMemory is the largest answer_memory.
const MaxAnswerMemory = 64 << 30

// AnswerBudget is the gateway's bound on the provider answers held at once (answer_memory), the
// one budget every config shares; its bounds are this config's once it has started. Nil once
// the config is cleaned up: a handler keeps the budget it took in Provision.
func (a *App) AnswerBudget() *upstream.AnswerBudget { return a.answers }
