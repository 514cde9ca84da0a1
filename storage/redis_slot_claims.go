package storage

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Slot claims on Redis (SlotClaims). Key layout (after the prefix):
//
//	sc   sorted set: the open claims' ids by deadline µs
//	sk   hash: each open claim's counter name

var (
	// KEYS: counter, claims, claim counters. ARGV: limit, claim id, deadline µs, counter name.
	// Returns 1 when claimed, 0 at the limit.
	scriptClaimSlot = newScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local lim = tonumber(ARGV[1])
if lim >= 0 and cur + 1 > lim then return 0 end
redis.call('INCRBY', KEYS[1], 1)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[4])
return 1`)

	// KEYS: claims, claim counters. ARGV: claim id, prefix. Returns 1 when the claim was open
	// (its slot given back), 0 when it had ended.
	scriptReleaseClaim = newScript(`
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local c = redis.call('HGET', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if c then redis.call('INCRBY', ARGV[2] .. 'c:' .. c, -1) end
return 1`)

	// KEYS: claims, claim counters. ARGV: claim id, deadline µs, counter name. Opens the claim
	// again (a task create that too few replicas confirmed, taken back).
	scriptReopenClaim = newScript(`
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1`)

	// KEYS: task, unfinished set, account's tasks, all tasks, claims, claim counters. ARGV: as
	// scriptCreateTask's first eight, then the claim id, the record without Active and the
	// idempotency key's entry (or ""). Returns 0 when the
	// task exists, 1 when written keeping the claim's slot, 2 when written without it (the
	// claim had ended: its slot was given back).
	scriptCreateClaimedTask = newScript(luaWriteNewTask + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local js, code = ARGV[1], 1
if redis.call('ZREM', KEYS[5], ARGV[9]) == 1 then
  redis.call('HDEL', KEYS[6], ARGV[9])
else
  js, code = ARGV[10], 2
end
writeNewTask(js, ARGV[11])
return code`)
)

// ClaimSlot waits for no replica, as ReserveCounter: the create's record, which ends the claim,
// waits for them, and WAIT covers every write before it.
func (r *Redis) ClaimSlot(ctx context.Context, c SlotClaim, limit int64) (bool, error) {
	n, err := r.exec(ctx, scriptClaimSlot, []string{r.key("c:", c.Counter), r.key("sc"), r.key("sk")},
		[]string{itoa(limit), c.ID, itoa(micros(c.Deadline)), c.Counter}).AsInt64()
	return n == 1, err
}

func (r *Redis) ReleaseClaim(ctx context.Context, claimID string) (bool, error) {
	res, unconfirmed := r.execDurable(ctx, scriptReleaseClaim, []string{r.key("sc"), r.key("sk")}, []string{claimID, r.prefix})
	n, err := res.AsInt64()
	if err != nil {
		return false, err
	}
	if unconfirmed != nil && n == 1 {
		// A give-back stays and counts as done, as AddCounter's (see there).
		r.logger.Warn("a slot claim's give-back is on the master alone: a failover before the replicas catch up loses it",
			zap.String("claim", claimID), errField(unconfirmed))
	}
	return n == 1, nil
}

func (r *Redis) OverdueClaims(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	return r.client.Do(ctx, r.client.B().Zrangebyscore().Key(r.key("sc")).Min("-inf").Max("("+itoa(micros(now))).
		Limit(0, int64(limit)).Build()).AsStrSlice()
}

func (r *Redis) CreateClaimedTask(ctx context.Context, task Task, claim SlotClaim) (Task, error) {
	task.Version = 1
	task.markFinished(r.now())
	js, err := marshalTask(&task)
	if err != nil {
		return Task{}, err
	}
	unslotted := task
	unslotted.Active = false
	jsNone, err := marshalTask(&unslotted)
	if err != nil {
		return Task{}, err
	}
	res, unconfirmed := r.execDurable(ctx, scriptCreateClaimedTask,
		[]string{r.key("t:", task.ID), r.key("tu"), r.key("ta:", task.Account), r.key("tc"), r.key("sc"), r.key("sk")},
		[]string{string(js), r.expireAtMillis(task), flag(task.Watched()), itoa(task.CreatedAt), task.ID, task.Account, task.Kind, r.prefix,
			claim.ID, string(jsNone), r.keyedTaskEntry(task)})
	code, err := res.AsInt64()
	if err != nil {
		return Task{}, err
	}
	switch code {
	case 0:
		return Task{}, ErrExists
	case 2:
		task.Active = false
	}
	if unconfirmed != nil {
		// As CreateTask: the record is deleted, and the claim it ended opened again, so that
		// the caller's failure path (which releases the claim) is the only outcome.
		gone, err := r.takeBack(ctx, "task create", scriptDeleteTask, []string{r.key("t:", task.ID), r.key("tu")}, []string{"1", task.ID, r.prefix}).AsInt64()
		if err == nil && gone == 0 {
			r.logger.Warn("a task create too few replicas confirmed was already changed by another instance; kept", zap.String("task_id", task.ID), errField(unconfirmed))
			return task, nil
		}
		if code == 1 {
			r.takeBack(ctx, "slot claim", scriptReopenClaim, []string{r.key("sc"), r.key("sk")},
				[]string{claim.ID, itoa(micros(claim.Deadline)), claim.Counter})
		}
		return Task{}, unconfirmed
	}
	return task, nil
}

var _ SlotClaims = (*Redis)(nil)
