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
	q.normal()
	index := r.key("ta:", account)
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
			if found && t.Account == account && q.Matches(t) {
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
