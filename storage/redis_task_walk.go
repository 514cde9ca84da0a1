package storage

import (
	"context"
	"errors"
	"slices"
	"strconv"
)

// taskWalk reads an account's task index (scored by creation time; among equal scores Redis
// orders members, the task ids, bytewise, as Badger's keys are) in the list's order, a batch at a
// time. Each batch goes on from the score where the last one stopped, reading a second's tasks
// whole, so that tasks created or deleted meanwhile never make it skip or repeat another.
type taskWalk struct {
	r           *Redis
	index       string
	newestFirst bool
	bound       string   // the score to read from: "+inf", "-inf" or "(<seconds>"
	pending     []string // ids read and not yet given out
	ended       bool     // nothing is left past bound
}

// newTaskWalk starts a walk of an account's index from its start or, with after, behind the task
// after. A task that is not in the index, or whose model listed refuses (TaskQuery.ModelAllowed),
// leaves nothing behind it: the walk has ended.
func (r *Redis) newTaskWalk(ctx context.Context, account, after string, newestFirst bool, listed func(model string) bool) (*taskWalk, error) {
	w := &taskWalk{r: r, index: r.key("ta:", account), newestFirst: newestFirst, bound: "-inf"}
	if newestFirst {
		w.bound = "+inf"
	}
	if after == "" {
		return w, nil
	}
	w.ended = true
	t, err := r.Task(ctx, after)
	if errors.Is(err, ErrNotFound) || err == nil && (t.Account != account || !listed(t.Model)) {
		return w, nil
	} else if err != nil {
		return nil, err
	}
	second := strconv.FormatInt(t.CreatedAt, 10)
	ties, err := w.second(ctx, second)
	if err != nil {
		return nil, err
	}
	at := slices.Index(ties, after)
	if at < 0 {
		return w, nil
	}
	w.pending, w.bound, w.ended = ties[at+1:], "("+second, false
	return w, nil
}

// second reads the ids of one second's tasks, in the walk's order.
func (w *taskWalk) second(ctx context.Context, score string) ([]string, error) {
	ids, err := w.r.client.Do(ctx, w.r.client.B().Zrangebyscore().Key(w.index).Min(score).Max(score).Build()).AsStrSlice()
	if w.newestFirst {
		slices.Reverse(ids)
	}
	return ids, err
}

// next returns up to about n more ids (more when a second's tasks go past n), or none at the end.
func (w *taskWalk) next(ctx context.Context, n int) ([]string, error) {
	if len(w.pending) > 0 {
		ids := w.pending
		w.pending = nil
		return ids, nil
	}
	if w.ended {
		return nil, nil
	}
	c := w.r.client.B()
	read := c.Zrangebyscore().Key(w.index).Min(w.bound).Max("+inf").Withscores().Limit(0, int64(n)).Build()
	if w.newestFirst {
		read = c.Zrevrangebyscore().Key(w.index).Max(w.bound).Min("-inf").Withscores().Limit(0, int64(n)).Build()
	}
	batch, err := w.r.client.Do(ctx, read).AsZScores()
	if err != nil {
		return nil, err
	}
	if len(batch) < n {
		w.ended = true
		ids := make([]string, len(batch))
		for i, z := range batch {
			ids[i] = z.Member
		}
		return ids, nil
	}
	// The last second of a full batch may go on past it: it is read whole.
	last := batch[len(batch)-1].Score
	var ids []string
	for _, z := range batch {
		if z.Score != last {
			ids = append(ids, z.Member)
		}
	}
	second := strconv.FormatInt(int64(last), 10)
	ties, err := w.second(ctx, second)
	if err != nil {
		return nil, err
	}
	w.bound = "(" + second
	return append(ids, ties...), nil
}
