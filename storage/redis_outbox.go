package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Key layout of the outbox (after the prefix):
//
//	o:<id>  hash {j, c}: a pending event and the token of the claim that holds it
//	od      sorted set: pending event ids by due time (Unix µs); a claimed event's score is the
//	        end of its lease, so an event whose worker died is due again then

// dueMicros rounds a due time up to the microsecond, so an event is never claimed early.
func dueMicros(unixNano int64) string {
	return itoa((max(unixNano, 0) + 999) / 1000)
}

func (r *Redis) EnqueueEvent(ctx context.Context, ev Event) (bool, error) {
	ev.Claim = ""
	js, err := json.Marshal(ev)
	if err != nil {
		return false, err
	}
	// An event that too few replicas confirmed stays queued on the master (it is delivered at
	// least once unless a failover loses it); the call fails so that the caller retries, and a
	// retry does not queue it twice.
	res, unconfirmed := r.execDurable(ctx, scriptEnqueueEvent, []string{r.key("o:", ev.ID), r.key("od")},
		[]string{string(js), dueMicros(ev.DueAt), ev.ID})
	n, err := res.AsInt64()
	if err != nil {
		return false, err
	}
	if unconfirmed != nil && n == 1 {
		return false, unconfirmed
	}
	return n == 1, nil
}

func (r *Redis) ClaimDueEvents(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	until := now.Add(lease)
	vals, err := r.exec(ctx, scriptClaimEvents, []string{r.key("od")},
		[]string{itoa(micros(now)), itoa(int64(limit)), dueMicros(until.UnixNano()), NewClaimToken() + ":", r.prefix}).AsStrSlice()
	if err != nil {
		return nil, err
	}
	events := make([]Event, 0, len(vals)/3)
	for i := 0; i+2 < len(vals); i += 3 {
		var ev Event
		if err := json.Unmarshal([]byte(vals[i+1]), &ev); err != nil {
			return nil, fmt.Errorf("redis store: decoding event %s: %v", vals[i], err)
		}
		ev.Claim, ev.DueAt = vals[i+2], until.UnixNano()
		events = append(events, ev)
	}
	return events, nil
}

func (r *Redis) AckEvent(ctx context.Context, id, claim string) error {
	n, err := r.execInt(ctx, scriptAckEvent, []string{r.key("o:", id), r.key("od")}, []string{claim, id})
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrLeaseLost
	}
	return nil
}

func (r *Redis) RescheduleEvent(ctx context.Context, ev Event, claim string) error {
	ev.Claim = ""
	js, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	n, err := r.execInt(ctx, scriptRescheduleEvent, []string{r.key("o:", ev.ID), r.key("od")},
		[]string{claim, string(js), dueMicros(ev.DueAt), ev.ID})
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrLeaseLost
	}
	return nil
}

func (r *Redis) NextEventDue(ctx context.Context) (time.Time, bool, error) {
	zs, err := r.client.Do(ctx, r.client.B().Zrange().Key(r.key("od")).Min("0").Max("0").Withscores().Build()).AsZScores()
	if err != nil {
		return time.Time{}, false, err
	}
	if len(zs) == 0 {
		return time.Time{}, false, nil
	}
	return time.UnixMicro(int64(zs[0].Score)), true, nil
}

func (r *Redis) PendingEvents(ctx context.Context) (int, error) {
	n, err := r.client.Do(ctx, r.client.B().Zcard().Key(r.key("od")).Build()).AsInt64()
	return int(n), err
}
