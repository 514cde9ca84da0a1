package upstream

import (
	"bytes"
	"errors"
	"testing"
)

// TestAnswerOfMaxAnswerFitsABudgetOfMaxAnswer: the config check lets answer_memory equal
// max_answer ("an answer of max_answer must fit"), but an answer of exactly max_answer bytes,
// with or without its Content-Length, is read into a buffer of max_answer+1 bytes (the byte that
// tells whether it ends there), which such a budget refuses: on an idle gateway the query is
// 503 gateway_busy and the edit 502, charged.
func TestAnswerOfMaxAnswerFitsABudgetOfMaxAnswer(t *testing.T) {
	const limit = 1 << 20
	body := bytes.Repeat([]byte("x"), limit)
	for _, declared := range []int64{limit, -1} {
		budget := NewAnswerBudget(limit, limit)
		hold := &AnswerHold{budget: budget}
		got, err := readAnswer(bytes.NewReader(body), declared, limit, hold)
		hold.Release()
		if err != nil || len(got) != limit {
			t.Errorf("declared %d: an answer of max_answer (%d bytes) in an idle budget of max_answer: %d bytes, %v", declared, limit, len(got), err)
		}
	}
}

// One byte past max_answer is still too large, declared or not, in a budget of max_answer: the
// byte that tells is read into a byte of its own, never into the budget.
func TestAnswerPastMaxAnswerInABudgetOfMaxAnswer(t *testing.T) {
	const limit = 1 << 20
	body := bytes.Repeat([]byte("x"), limit+1)
	for _, declared := range []int64{limit, -1} {
		budget := NewAnswerBudget(limit, limit)
		hold := &AnswerHold{budget: budget}
		got, err := readAnswer(bytes.NewReader(body), declared, limit, hold)
		if !errors.Is(err, errAnswerTooLarge) || got != nil || budget.Held() > limit {
			t.Errorf("declared %d: an answer of max_answer+1: %d bytes, %v, %d held", declared, len(got), err, budget.Held())
		}
		hold.Release()
	}
}
