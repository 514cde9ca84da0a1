package storage

import (
	"context"
	"strconv"
)

// searchBatch is how many index entries a search asks the server for at once.
const searchBatch = 200

// SearchTasks reads the account's index (scored by creation time) newest first in batches.
// Among tasks created in the same second the index is in reverse order of their ids, as in
// Badger's keys, so the cursor (time, id) continues exactly where the previous page stopped.
func (r *Redis) SearchTasks(ctx context.Context, account string, q TaskSearch) (TaskSearchPage, error) {
	return r.searchIndex(ctx, r.key("ta:", account), q, func(t Task) bool { return t.Account == account })
}

// SearchAllTasks reads the index of every task (tc) as SearchTasks reads an account's. Tasks
// created before that index existed are not in it: they are found by their account's search.
func (r *Redis) SearchAllTasks(ctx context.Context, q TaskSearch) (TaskSearchPage, error) {
	return r.searchIndex(ctx, r.key("tc"), q, func(Task) bool { return true })
}

// searchIndex reads index, a sorted set of task ids scored by creation time, newest first from
// q's cursor; owns says whether a record belongs to the index's account. Entries whose records
// are gone (expired) are dropped from the index.
func (r *Redis) searchIndex(ctx context.Context, index string, q TaskSearch, owns func(Task) bool) (TaskSearchPage, error) {
	q.normal()
	upper, lower := "+inf", "-inf"
	var curCreated int64
	var curID string
	switch {
	case q.Before != "":
		var err error
		if curCreated, curID, err = parseTaskCursor(q.Before); err != nil {
			return TaskSearchPage{}, err
		}
		upper = strconv.FormatInt(curCreated, 10)
	case q.To != 0:
		upper = strconv.FormatInt(q.To, 10)
	}
	if q.From != 0 {
		lower = strconv.FormatInt(q.From, 10)
	}
	var page TaskSearchPage
	var gone []string
	defer func() {
		if len(gone) == 0 {
			return
		}
		// Expired records leave their index entries behind; a failure here only delays that.
		if err := r.client.Do(ctx, r.client.B().Zrem().Key(index).Member(gone...).Build()).Error(); err != nil {
			r.logger.Debug("dropping expired task index entries", errField(err))
		}
	}()
	scanned := 0
	for offset := int64(0); ; {
		batch, err := r.client.Do(ctx, r.client.B().Zrevrangebyscore().Key(index).Max(upper).Min(lower).
			Withscores().Limit(offset, searchBatch).Build()).AsZScores()
		if err != nil {
			return page, err
		}
		offset += int64(len(batch))
		ids := make([]string, 0, len(batch))
		created := make(map[string]int64, len(batch))
		for _, z := range batch {
			c := int64(z.Score)
			if q.Before != "" && c == curCreated && z.Member >= curID {
				continue // on an earlier page
			}
			ids = append(ids, z.Member)
			created[z.Member] = c
		}
		err = r.readTasks(ctx, ids, func(id string, t Task, found bool) {
			if scanned == q.Scan || len(page.Tasks) == q.Limit {
				return
			}
			scanned++
			page.Next = taskCursor(created[id], id)
			if !found {
				gone = append(gone, id)
			}
			if found && owns(t) && q.Matches(t) {
				page.Tasks = append(page.Tasks, t)
			}
		})
		if err != nil {
			return page, err
		}
		if scanned == q.Scan || len(page.Tasks) == q.Limit {
			if len(ids) > 0 && page.Next != taskCursor(created[ids[len(ids)-1]], ids[len(ids)-1]) {
				return page, nil // an entry after Next was left unread: there is more
			}
			if len(batch) < searchBatch {
				page.Next = ""
				return page, nil
			}
			more, err := r.client.Do(ctx, r.client.B().Zrevrangebyscore().Key(index).Max(upper).Min(lower).
				Limit(offset, 1).Build()).AsStrSlice()
			if err != nil {
				return page, err
			}
			if len(more) == 0 {
				page.Next = ""
			}
			return page, nil
		}
		if len(batch) < searchBatch {
			page.Next = ""
			return page, nil
		}
	}
}
