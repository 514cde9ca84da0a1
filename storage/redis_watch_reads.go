package storage

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// Key layout of the read logs (after the prefix):
//
//	wr:<log>  sorted set: task ids by when a watcher last read them (Unix µs of the reader's
//	          clock); records older than the caller's keep are trimmed by the notes that ask for
//	          it, and the set expires twice keep after the last of them

// scriptNoteReads: KEYS: lease 1, log 1, lease 2, log 2, … ARGV: owner, at µs, trim before µs
// (exclusive), log ttl ms, then per group: the number of its ids, 1 to trim the log (0 not to),
// its ids. Returns the
// (0-based) indexes of the groups whose lease owner does not hold.
var scriptNoteReads = rueidis.NewLuaScript(`
local lost = {}
local a = 5
for i = 1, #KEYS, 2 do
  local n = tonumber(ARGV[a])
  local trim = ARGV[a + 1] == '1'
  a = a + 2
  if redis.call('HGET', KEYS[i], 'o') == ARGV[1] then
    local j = 0
    while j < n do
      local args = {}
      for k = j, math.min(j + 200, n) - 1 do
        args[#args + 1] = ARGV[2]
        args[#args + 1] = ARGV[a + k]
      end
      redis.call('ZADD', KEYS[i + 1], 'GT', unpack(args))
      j = j + 200
    end
    if trim then
      redis.call('ZREMRANGEBYSCORE', KEYS[i + 1], '-inf', '(' .. ARGV[3])
      redis.call('PEXPIRE', KEYS[i + 1], ARGV[4])
    end
  else
    lost[#lost + 1] = (i - 1) / 2
  end
  a = a + n
end
return lost`)

// NoteReads checks the leases and records the reads in one script, so that it runs between two
// AcquireLeases, never across one.
func (r *Redis) NoteReads(ctx context.Context, owner string, at time.Time, keep time.Duration, groups []ShardReads) ([]int, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, 2*len(groups))
	args := []string{owner, itoa(micros(at)), itoa(micros(at.Add(-keep))), millis(2 * keep)}
	for _, g := range groups {
		keys = append(keys, r.key("l:", g.Lease), r.key("wr:", g.Log))
		trim := "0"
		if g.Trim {
			trim = "1"
		}
		args = append(args, strconv.Itoa(len(g.IDs)), trim)
		args = append(args, g.IDs...)
	}
	lost, err := r.exec(ctx, scriptNoteReads, keys, args).AsIntSlice()
	if err != nil {
		return nil, err
	}
	out := make([]int, len(lost))
	for i, n := range lost {
		out[i] = int(n)
	}
	return out, nil
}

// RecentReads reads the log's records from since on with one ZRANGE.
func (r *Redis) RecentReads(ctx context.Context, log string, since time.Time) (map[string]time.Time, error) {
	zs, err := r.client.Do(ctx, r.client.B().Zrange().Key(r.key("wr:", log)).Min(itoa(micros(since))).Max("+inf").
		Byscore().Withscores().Build()).AsZScores()
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(zs))
	for _, z := range zs {
		out[z.Member] = time.UnixMicro(int64(z.Score))
	}
	return out, nil
}

// Interface guards
var _ ReadLogs = (*Redis)(nil)
