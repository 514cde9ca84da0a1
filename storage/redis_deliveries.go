package storage

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// KEYS: the task's deliveries (a sorted set of records scored by their time in milliseconds,
// which a score holds exactly). ARGV: json, time (ms), keep, ttl ms. The set holds the newest keep records and expires ttl after the newest.
var scriptRecordDelivery = newScript(`
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local past = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if past > 0 then
  local old = redis.call('ZRANGE', KEYS[1], 0, past - 1)
  redis.call('ZREM', KEYS[1], unpack(old))
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`)

func (r *Redis) RecordDelivery(ctx context.Context, d Delivery, ttl time.Duration) error {
	val, err := json.Marshal(d)
	if err != nil {
		return err
	}
	ttl = max(ttl, minTaskRecordTTL)
	_, err = r.execInt(ctx, scriptRecordDelivery, []string{r.key("cd:", d.TaskID)},
		[]string{string(val), strconv.FormatInt(d.At/int64(time.Millisecond), 10), strconv.Itoa(MaxDeliveries), strconv.FormatInt(ttl.Milliseconds(), 10)})
	return err
}

func (r *Redis) TaskDeliveries(ctx context.Context, taskID string) ([]Delivery, error) {
	list, err := r.client.Do(ctx, r.client.B().Zrange().Key(r.key("cd:", taskID)).Min("0").Max(strconv.Itoa(MaxDeliveries-1)).Build()).AsStrSlice()
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, 0, len(list))
	for _, js := range list {
		var d Delivery
		if err := json.Unmarshal([]byte(js), &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
