package storage

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/zap"
)

// ErrNotReplicated is the error of a write that the server applied but that fewer replicas than
// RedisOptions.WaitReplicas confirmed within RedisOptions.WaitTimeout: a failover could lose it,
// so it is not acknowledged. Where the write can be taken back (a task created or changed, an
// idempotency key taken, a charge) the store takes it back on the server before answering; the
// caller treats the error as any failed write. Other writes stay on the master and the call
// fails: a refund or slot release (taking it back would lose it for certain), a key or account
// change or deletion, a callback event, item claims, a setting and a stored idempotent answer. A
// caller that retries one of these must read first: the retry may find it done (a key change's
// version has moved, a deleted key is gone).
var ErrNotReplicated = errors.New("too few replicas confirmed the write")

// DefaultRedisWaitTimeout is how long a durable write waits for its replicas when
// RedisOptions.WaitReplicas is set and WaitTimeout is not.
const DefaultRedisWaitTimeout = time.Second

// redisScript is one of the store's Lua scripts: run by the client (EVALSHA, EVAL when the server
// does not know it yet), or sent with a WAIT behind it when its write must reach the replicas.
type redisScript struct {
	lua      *rueidis.Lua
	src, sha string
}

// luaScript is a script that the client runs: a *redisScript, or a plain *rueidis.Lua for a
// write that never waits for replicas.
type luaScript interface {
	Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult
}

// Exec runs the script without waiting for replicas.
func (s *redisScript) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	return s.lua.Exec(ctx, c, keys, args)
}

func newScript(src string) *redisScript {
	sum := sha1.Sum([]byte(src))
	return &redisScript{lua: rueidis.NewLuaScript(src), src: src, sha: hex.EncodeToString(sum[:])}
}

// execDurable runs a script whose write the gateway acknowledges as durable. With WaitReplicas
// set, `WAIT n timeout` follows it on the same connection, in one pipeline, and the write counts
// only when at least n replicas confirmed everything that connection wrote. res is the script's
// answer; unconfirmed (wrapping ErrNotReplicated) is set when the script ran but too few replicas
// confirmed it: what it wrote may be on the master alone, for the caller to take back when the
// answer says it wrote something, and the operation fails.
func (r *Redis) execDurable(ctx context.Context, s *redisScript, keys, args []string) (res rueidis.RedisResult, unconfirmed error) {
	if r.waitReplicas <= 0 {
		return r.exec(ctx, s, keys, args), nil
	}
	evalsha := r.client.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	res, unconfirmed = r.awaitReplicas(ctx, keys[0], evalsha)
	if err, ok := rueidis.IsRedisErr(res.Error()); ok && err.IsNoScript() {
		eval := r.client.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
		res, unconfirmed = r.awaitReplicas(ctx, keys[0], eval)
	}
	return res, unconfirmed
}

// awaitReplicas sends write and a WAIT in one DoMulti. The client sends both on one connection, in
// order (WAIT is a blocking command, so the pipeline goes to a connection of its own, which no
// other request shares while the WAIT blocks), and in a Cluster the WAIT carries the slot of key
// so that it goes to the master that took the write. WAIT answers how many replicas acknowledged
// every write of its connection so far.
func (r *Redis) awaitReplicas(ctx context.Context, key string, write rueidis.Completed) (rueidis.RedisResult, error) {
	wait := r.client.B().Wait().Numreplicas(r.waitReplicas).Timeout(r.waitTimeout.Milliseconds()).Build().SetSlot(key)
	// Not cancelled with the request: a client that leaves while the WAIT blocks would make every
	// answer of the pipeline its context's error, the write's too, and a write that ran would be
	// reported as never made (a charge nobody refunds, an idempotency key left in flight).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.waitTimeout+waitSlack)
	defer cancel()
	res := r.client.DoMulti(wctx, write, wait)
	if res[0].Error() != nil {
		return res[0], nil
	}
	n, err := res[1].AsInt64()
	if err != nil {
		return res[0], fmt.Errorf("redis store: waiting for %d replicas: %w (%v)", r.waitReplicas, ErrNotReplicated, err)
	}
	if n < r.waitReplicas {
		return res[0], fmt.Errorf("redis store: %w: %d of %d replicas within %s", ErrNotReplicated, n, r.waitReplicas, r.waitTimeout)
	}
	return res[0], nil
}

// waitSlack is how long past its own timeout a WAIT's pipeline may take to answer.
const waitSlack = 5 * time.Second

// takeBack runs a script that undoes a write that too few replicas confirmed and returns its
// answer, for the caller to see whether the undo found what it undoes (a compare-and-set undo
// finds nothing to undo when another change came meanwhile). It is not waited for: it reaches the
// replicas after the write, or not at all with it. A failure is logged, as the write is then on
// the master alone.
func (r *Redis) takeBack(ctx context.Context, what string, s *redisScript, keys, args []string) rueidis.RedisResult {
	res := r.exec(context.WithoutCancel(ctx), s, keys, args)
	if err := res.Error(); err != nil {
		r.logger.Error("taking back a write that too few replicas confirmed", zap.String("write", what), errField(err))
	}
	return res
}
