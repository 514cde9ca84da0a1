package storage

// The Redis backend's atomic operations, each one Lua script that Redis runs without
// interleaving another command: every compare-and-set, claim, limit and window is decided on the
// server, so that any number of gateway processes share it exactly. The scripts are sent by
// EVALSHA (EVAL once, when the server does not know them yet).
//
// Records that carry a version are hashes with the fields v (the version) and j (the JSON
// record, whose own version field the Go side sets to the new version). Times are Unix
// microseconds, which a Lua number (a double) holds exactly.
//
// Scripts that touch a key they cannot name in advance build it from the key prefix in ARGV; every
// key shares the prefix's hash tag, so all of them live in one Cluster slot.
// luaWriteNewTask defines writeNewTask(js, keyed), which writes a new task's record js and its index
// entries, with scriptCreateTask's KEYS and ARGV, and, when keyed (a key's name) is not empty,
// the index entry of the task's idempotency key (Tasks.TaskOfIdempotencyKey) under it.
const luaWriteNewTask = `
local function writeNewTask(js, keyed)
  redis.call('HSET', KEYS[1], 'v', 1, 'j', js, 'a', ARGV[6], 'k', ARGV[7], 'c', ARGV[4])
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
  if keyed and keyed ~= '' then
    redis.call('SET', keyed, ARGV[5])
    redis.call('PEXPIREAT', keyed, ARGV[2])
  end
  if ARGV[3] == '1' then redis.call('SADD', KEYS[2], ARGV[5]) end
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[5])
  for _, old in ipairs(redis.call('ZRANGE', KEYS[4], 0, 1)) do
    if redis.call('EXISTS', ARGV[8] .. 't:' .. old) == 0 then redis.call('ZREM', KEYS[4], old) end
  end
end
`

var (
	// KEYS: task, unfinished set, account index, index of all tasks. ARGV: json, expire-at ms,
	// unfinished, created, id, account, kind, prefix, the idempotency key's entry (or ""). Returns 1 when created, 0 when a record is
	// there. Each create also drops the two oldest entries of the index of all tasks if their
	// records are gone (expired), so that index keeps about as many entries as there are records.
	scriptCreateTask = newScript(luaWriteNewTask + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
writeNewTask(ARGV[1], ARGV[9])
return 1`)

	// KEYS: task, unfinished set. ARGV: expected version, json, expire-at ms, unfinished, id,
	// account, kind, created, and '1' to have the replaced record back. Returns {1} when stored
	// ({1, json} with the replaced record), {0} on another version, {-1} when missing,
	// {-2, account, kind, created} when the record's immutable fields differ from the ones given.
	scriptReplaceTask = newScript(`
local cur = redis.call('HMGET', KEYS[1], 'v', 'a', 'k', 'c', 'j')
if not cur[1] then return {-1} end
if cur[1] ~= ARGV[1] then return {0} end
if cur[2] ~= ARGV[6] or cur[3] ~= ARGV[7] or cur[4] ~= ARGV[8] then return {-2, cur[2], cur[3], cur[4]} end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'j', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
if ARGV[4] == '1' then redis.call('SADD', KEYS[2], ARGV[5]) else redis.call('SREM', KEYS[2], ARGV[5]) end
if ARGV[9] == '1' then return {1, cur[5]} end
return {1}`)

	// KEYS: task, unfinished set. ARGV: version, id, prefix. Returns 1 when deleted or missing, 0
	// on another version.
	scriptDeleteTask = newScript(`
local cur = redis.call('HMGET', KEYS[1], 'v', 'a')
if not cur[1] then return 1 end
if cur[1] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
redis.call('ZREM', ARGV[3] .. 'ta:' .. cur[2], ARGV[2])
redis.call('ZREM', ARGV[3] .. 'tc', ARGV[2])
return 1`)

	// KEYS: key record (by hash), id → hash, key id set, directory version. ARGV: json, id, hash,
	// prefix, account. Returns 1 when created, 0 when the id or hash is taken.
	scriptCreateKey = newScript(`
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', 1, 'j', ARGV[1])
redis.call('SET', KEYS[2], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('ZADD', ARGV[4] .. 'kz', 0, ARGV[2])
redis.call('ZADD', ARGV[4] .. 'kn:' .. ARGV[5], 0, ARGV[2])
redis.call('ZADD', ARGV[4] .. 'an', 0, ARGV[5])
redis.call('INCR', KEYS[4])
return 1`)

	// KEYS: id → hash, directory version. ARGV: expected version, json, hash, prefix, id,
	// account. Returns 1 when stored, 0 on another version, -1 when missing, -3 when the hash
	// differs.
	scriptUpdateKey = newScript(`
local h = redis.call('GET', KEYS[1])
if not h then return -1 end
if h ~= ARGV[3] then return -3 end
local rec = ARGV[4] .. 'k:' .. h
local cur = redis.call('HMGET', rec, 'v', 'j')
if not cur[1] then return -1 end
if cur[1] ~= ARGV[1] then return 0 end
local was = cjson.decode(cur[2]).account
if was ~= ARGV[6] then
  redis.call('ZREM', ARGV[4] .. 'kn:' .. was, ARGV[5])
  redis.call('ZADD', ARGV[4] .. 'kn:' .. ARGV[6], 0, ARGV[5])
  redis.call('ZADD', ARGV[4] .. 'an', 0, ARGV[6])
end
redis.call('HSET', rec, 'v', tonumber(ARGV[1]) + 1, 'j', ARGV[2])
redis.call('INCR', KEYS[2])
return 1`)

	// KEYS: id → hash, key id set, directory version. ARGV: id, prefix. Returns the deleted key's
	// hash, or false when missing.
	scriptDeleteKey = newScript(`
local h = redis.call('GET', KEYS[1])
if not h then return false end
local j = redis.call('HGET', ARGV[2] .. 'k:' .. h, 'j')
if j then redis.call('ZREM', ARGV[2] .. 'kn:' .. cjson.decode(j).account, ARGV[1]) end
redis.call('ZREM', ARGV[2] .. 'kz', ARGV[1])
redis.call('DEL', ARGV[2] .. 'k:' .. h, KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('INCR', KEYS[3])
return h`)

	// KEYS: account, account name set, directory version. ARGV: expected version, json, name,
	// prefix. Returns 1 when stored, 0 on another version.
	scriptSaveAccount = newScript(`
local v = redis.call('HGET', KEYS[1], 'v') or '0'
if v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'j', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
redis.call('ZADD', ARGV[4] .. 'an', 0, ARGV[3])
redis.call('INCR', KEYS[3])
return 1`)

	// KEYS: a set of names. ARGV: prefix of the records, field. Returns the field of every member's
	// record (false for a missing one), in member order, with the members.
	scriptListRecords = newScript(`
local names = redis.call('SMEMBERS', KEYS[1])
local out = {}
for i, n in ipairs(names) do
  out[2*i-1] = n
  out[2*i] = redis.call('HGET', ARGV[1] .. n, ARGV[2])
end
return out`)

	// KEYS: idempotency record. ARGV: owner, json, ttl ms. Returns {1} when begun, {0, json} with
	// the record that is there otherwise.
	scriptBeginIdempotent = newScript(`
local cur = redis.call('HGET', KEYS[1], 'j')
if cur then return {0, cur} end
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'f', '1', 'j', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1}`)

	// KEYS: idempotency record. ARGV: owner, json, ttl ms. Returns 1 when completed, 0 when the
	// record is not that owner's in-flight record.
	scriptCompleteIdempotent = newScript(`
local cur = redis.call('HMGET', KEYS[1], 'o', 'f')
if cur[1] ~= ARGV[1] or cur[2] ~= '1' then return 0 end
redis.call('HSET', KEYS[1], 'f', '0', 'j', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

	// KEYS: idempotency record. ARGV: owner, ttl ms. Returns 1 when renewed, 0 when the record is
	// not that owner's in-flight record.
	scriptRenewIdempotent = newScript(`
local cur = redis.call('HMGET', KEYS[1], 'o', 'f')
if cur[1] ~= ARGV[1] or cur[2] ~= '1' then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)

	// KEYS: idempotency record. ARGV: owner.
	scriptAbandonIdempotent = newScript(`
local cur = redis.call('HMGET', KEYS[1], 'o', 'f')
if cur[1] == ARGV[1] and cur[2] == '1' then redis.call('DEL', KEYS[1]) end
return 1`)

	// KEYS: lease. ARGV: owner, now µs, until µs, ttl ms (of the record). Returns 1 when owner holds
	// the lease.
	scriptAcquireLease = newScript(`
local cur = redis.call('HMGET', KEYS[1], 'o', 'u')
if cur[1] and cur[1] ~= ARGV[1] and tonumber(cur[2]) > tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'u', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`)

	// KEYS: lease. ARGV: owner, now µs, until µs, ttl ms. Returns 1 when renewed, 0 when lost.
	scriptRenewLease = newScript(`
local cur = redis.call('HMGET', KEYS[1], 'o', 'u')
if cur[1] ~= ARGV[1] or tonumber(cur[2]) <= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'u', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`)

	// KEYS: leases. ARGV: owner, now µs, until µs, ttl ms. Returns the (0-based) indexes of the
	// leases that owner does not hold; each of the others is renewed as scriptRenewLease does.
	scriptRenewLeases = newScript(`
local lost = {}
for i = 1, #KEYS do
  local cur = redis.call('HMGET', KEYS[i], 'o', 'u')
  if cur[1] ~= ARGV[1] or tonumber(cur[2]) <= tonumber(ARGV[2]) then
    lost[#lost + 1] = i - 1
  else
    redis.call('HSET', KEYS[i], 'u', ARGV[3])
    redis.call('PEXPIRE', KEYS[i], ARGV[4])
  end
end
return lost`)

	// KEYS: lease. ARGV: owner.
	scriptReleaseLease = newScript(`
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`)

	// KEYS: counter. ARGV: delta, limit. Returns {value, 1} when added, {value, 0} when the limit
	// refused it.
	scriptAddCounter = newScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local d = tonumber(ARGV[1])
local lim = tonumber(ARGV[2])
if lim >= 0 and d > 0 and cur + d > lim then return {cur, 0} end
return {redis.call('INCRBY', KEYS[1], ARGV[1]), 1}`)

	// KEYS: window. ARGV: now µs, window µs, limit, a unique member, exact limit. Returns {1, 0}
	// when counted, {0, retry after µs} when refused.
	//
	// Up to the exact limit the window is a sorted set of the counted events' times. Above it the
	// window is estimated from the counts of the current and the previous fixed window (a hash),
	// the previous weighted by how much of it the sliding window still covers.
	scriptAllowRate = newScript(`
local now, win, lim = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ttl = math.ceil(win / 1000) * 2 + 1000
if lim <= tonumber(ARGV[5]) then
  if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then redis.call('DEL', KEYS[1]) end
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - win)
  if redis.call('ZCARD', KEYS[1]) < lim then
    redis.call('ZADD', KEYS[1], now, ARGV[4])
    redis.call('PEXPIRE', KEYS[1], ttl)
    return {1, 0}
  end
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + win - now}
end
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then redis.call('DEL', KEYS[1]) end
local start = now - (now % win)
local cur = redis.call('HMGET', KEYS[1], 's', 'c', 'p')
local s, c, p = tonumber(cur[1] or '-1'), tonumber(cur[2] or '0'), tonumber(cur[3] or '0')
if s == start - win then p, c = c, 0 elseif s ~= start then p, c = 0, 0 end
local overlap = (win - (now - start)) / win
if p * overlap + c >= lim then
  redis.call('HSET', KEYS[1], 's', start, 'c', c, 'p', p)
  return {0, start + win - now}
end
redis.call('HSET', KEYS[1], 's', start, 'c', c + 1, 'p', p)
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, 0}`)

	// KEYS: setting. ARGV: value. Returns the stored value.
	scriptSettingOnce = newScript(`
local cur = redis.call('GET', KEYS[1]) or ARGV[1]
redis.call('SET', KEYS[1], cur)
return cur`)

	// KEYS: event, due index. ARGV: json, due µs, id. Returns 1 when stored, 0 when pending.
	scriptEnqueueEvent = newScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'j', ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1`)

	// KEYS: due index. ARGV: now µs, limit, until µs, claim token prefix, key prefix. Returns
	// {id, json, claim, …} for each claimed event, earliest due first.
	scriptClaimEvents = newScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i, id in ipairs(ids) do
  local k = ARGV[5] .. 'o:' .. id
  local j = redis.call('HGET', k, 'j')
  if j then
    local claim = ARGV[4] .. i
    redis.call('HSET', k, 'c', claim)
    redis.call('ZADD', KEYS[1], ARGV[3], id)
    out[#out+1] = id
    out[#out+1] = j
    out[#out+1] = claim
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out`)

	// KEYS: event, due index. ARGV: claim, id. Returns 1 when acknowledged, 0 when the claim is
	// not held.
	scriptAckEvent = newScript(`
local c = redis.call('HGET', KEYS[1], 'c')
if ARGV[1] == '' or c ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1`)

	// KEYS: event, due index. ARGV: claim, json, due µs, id. Returns 1 when rescheduled, 0 when
	// the claim is not held.
	scriptRescheduleEvent = newScript(`
local c = redis.call('HGET', KEYS[1], 'c')
if ARGV[1] == '' or c ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'j', ARGV[2])
redis.call('HDEL', KEYS[1], 'c')
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1`)
)
