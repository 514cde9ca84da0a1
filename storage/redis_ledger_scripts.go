package storage

// The Redis ledger's scripts. Key layout (after the prefix):
//
//	lb:<account>             hash {a, h, l, n}: balance, held, limited ('1'), entries so far
//	le:<account>             sorted set: the account's entries (JSON), each scored by its number
//	lh:<hold id>             hash {j, a, k, m, r, amt, s, b, d, p, e, o}: the hold as Go wrote
//	                         it (j), and what the scripts read and change: account, key, model,
//	                         ref, amount, state, bound ('1'), deadline µs, budget counter,
//	                         entry, released by the reconciler ('1')
//	lo                       sorted set: the open, unbound holds' ids by deadline µs
//	lk:<key id>\x00<period>  integer: what the key holds and was charged in the period
//	lc:<account>\x00<key>    string: the entry a credit made, under its idempotency key
//
// Amounts are integers; a Lua number (a double) holds each exactly, as amounts stay within
// MaxAmount. The scripts use only the commands of RedisACLCommands. Entries are JSON written by
// luaLedgerEntry, with their numbers as strings (redisEntry decodes them).

// luaLedgerEntry defines entry(), which adds an entry to a ledger and returns its JSON; add(),
// which adds to the integer fields of a hash and returns their new values; and money(), which
// prints micro-units as internal/money.Format does.
const luaLedgerEntry = `
local function money(x)
  local sign = ''
  if x < 0 then sign, x = '-', -x end
  local units = math.floor(x / 1000000)
  local rest = x - units * 1000000
  local out = sign .. string.format('%d', units)
  if rest > 0 then out = out .. '.' .. (string.gsub(string.format('%06d', rest), '0+$', '')) end
  return out
end
local function entry(list, n, t, account, key, model, ref, hold, kind, amount, after, charged, note)
  local js = cjson.encode({id = string.format('%d', n), t = t, ac = account, k = key, m = model,
    r = ref, hd = hold, kd = kind, am = string.format('%d', amount), ba = string.format('%d', after),
    ch = string.format('%d', charged), no = note})
  redis.call('ZADD', list, n, js)
  return js
end
local function add(key, f1, d1, f2, d2, f3, d3)
  local cur = redis.call('HMGET', key, f1, f2, f3)
  local v1, v2, v3 = tonumber(cur[1] or '0') + d1, tonumber(cur[2] or '0') + d2, tonumber(cur[3] or '0') + d3
  redis.call('HSET', key, f1, string.format('%d', v1), f2, string.format('%d', v2), f3, string.format('%d', v3))
  return v1, v2, v3
end
`

var (
	// KEYS: hold, balance, entries, open set, budget counter. ARGV: hold json, account, key,
	// model, ref, id, amount, now µs, deadline µs, bound, budget limit, budget ttl ms, the
	// ledger's bound (MaxAmount), below minus which no balance goes.
	// Returns {1, entry} when held, {0, j, s, b, r, o, e, d} with the hold there (o: the
	// reconciler's mark; d: its deadline, which RenewHold moves), {-1} when the balance does not
	// cover it, {-2} when the budget does not.
	scriptLedgerHold = newScript(luaLedgerEntry + `
local cur = redis.call('HMGET', KEYS[1], 'j', 's', 'b', 'r', 'o', 'e', 'd')
if cur[1] then return {0, cur[1], cur[2], cur[3] or '', cur[4] or '', cur[5] or '', cur[6], cur[7] or ''} end
local amt = tonumber(ARGV[7])
local bal = redis.call('HMGET', KEYS[2], 'a', 'l')
if bal[2] == '1' and tonumber(bal[1] or '0') < amt then return {-1} end
if tonumber(bal[1] or '0') - amt < -tonumber(ARGV[13]) then return {-1} end
local lim = tonumber(ARGV[11])
local counter = ''
if lim > 0 then
  local spent = tonumber(redis.call('GET', KEYS[5]) or '0')
  if spent + amt > lim then return {-2} end
  redis.call('INCRBY', KEYS[5], ARGV[7])
  if tonumber(ARGV[12]) > 0 then redis.call('PEXPIRE', KEYS[5], ARGV[12]) end
  counter = KEYS[5]
end
local after, _, n = add(KEYS[2], 'a', -amt, 'h', amt, 'n', 1)
local e = entry(KEYS[3], n, ARGV[8], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], 'hold', -amt, after, 0, '')
redis.call('HSET', KEYS[1], 'j', ARGV[1], 'a', ARGV[2], 'k', ARGV[3], 'm', ARGV[4], 'r', ARGV[5],
  'amt', ARGV[7], 's', 'open', 'b', ARGV[10], 'd', ARGV[9], 'p', counter, 'e', e)
if ARGV[10] ~= '1' then redis.call('ZADD', KEYS[4], ARGV[9], ARGV[6]) end
return {1, e}`)

	// KEYS: hold, open set. ARGV: charged, now µs, kind (settle or release), note, prefix, id,
	// unbound only ("1": the reconciler's release; a hold bound to a task, or whose deadline (d,
	// which RenewHold moves with its place on lo) is not before now, is left open, and the one
	// it releases is marked reconciled, o = '1'). Returns {1, entry} when ended, {-1} when
	// missing, {-3} when it has ended, {-6} when the reconciler ended it, {-4} when it is bound
	// and ARGV[7] is "1", {-7} when it is not due and ARGV[7] is "1". ARGV[8] is the ledger's bound
	// (MaxAmount): a settlement charges no more than takes the balance to minus it (at least the
	// hold).
	scriptLedgerEnd = newScript(luaLedgerEntry + `
local h = redis.call('HMGET', KEYS[1], 'a', 'k', 'm', 'r', 'amt', 's', 'p', 'b', 'o', 'd')
if not h[1] then return {-1} end
if h[6] ~= 'open' then
  if h[9] == '1' then return {-6} end
  return {-3}
end
if ARGV[7] == '1' and h[8] == '1' then return {-4} end
if ARGV[7] == '1' and tonumber(h[10] or '0') >= tonumber(ARGV[2]) then return {-7} end
if ARGV[7] == '1' then redis.call('HSET', KEYS[1], 'o', '1') end
local held, charged = tonumber(h[5]), tonumber(ARGV[1])
local bal = ARGV[5] .. 'lb:' .. h[1]
charged = math.min(charged, math.max(held, tonumber(redis.call('HGET', bal, 'a') or '0') + held + tonumber(ARGV[8])))
local note = ARGV[4]
if ARGV[3] == 'settle' and charged > held then
  note = 'charged ' .. money(charged - held) .. ' over the hold of ' .. money(held)
end
if h[7] ~= '' and redis.call('EXISTS', h[7]) == 1 then redis.call('INCRBY', h[7], charged - held) end
local after, _, n = add(bal, 'a', held - charged, 'h', -held, 'n', 1)
local e = entry(ARGV[5] .. 'le:' .. h[1], n, ARGV[2], h[1], h[2], h[3], h[4], ARGV[6], ARGV[3], held - charged, after, charged, note)
redis.call('HSET', KEYS[1], 's', ARGV[3] == 'settle' and 'settled' or 'released')
redis.call('ZREM', KEYS[2], ARGV[6])
return {1, e}`)

	// KEYS: hold, open set. ARGV: task id, hold id. Returns 1 when bound, 0 when bound to that
	// task already, -1 when missing, -3 when ended, -6 when the reconciler ended it, -4 when
	// bound to another task.
	scriptLedgerBind = newScript(`
local h = redis.call('HMGET', KEYS[1], 's', 'b', 'r', 'o')
if not h[1] then return -1 end
if h[1] ~= 'open' then
  if h[4] == '1' then return -6 end
  return -3
end
if h[2] == '1' then
  if h[3] == ARGV[1] then return 0 end
  return -4
end
redis.call('HSET', KEYS[1], 'b', '1', 'r', ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1`)

	// KEYS: hold, open set. ARGV: hold id, deadline µs. Returns 1 when the deadline moved, 0
	// when it was that late already, -1 when missing, -3 when ended, -4 when bound.
	scriptLedgerRenew = newScript(`
local h = redis.call('HMGET', KEYS[1], 's', 'b', 'd')
if not h[1] then return -1 end
if h[1] ~= 'open' then return -3 end
if h[2] == '1' then return -4 end
if tonumber(h[3] or '0') >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1`)

	// KEYS: credit record, balance, entries. ARGV: amount, now µs, note, account, bound. Returns
	// {1, entry} when credited, {0, entry} with the entry the key made before, {-5} when the
	// balance would pass ±bound, or pass bound once every open hold is released.
	scriptLedgerCredit = newScript(luaLedgerEntry + `
local done = redis.call('GET', KEYS[1])
if done then return {0, done} end
local amt = tonumber(ARGV[1])
local bal = redis.call('HMGET', KEYS[2], 'a', 'h')
local bound, cur, held = tonumber(ARGV[5]), tonumber(bal[1] or '0'), tonumber(bal[2] or '0')
if cur + held + amt > bound or cur + amt < -bound then return {-5} end
redis.call('HSET', KEYS[2], 'l', '1')
local after, _, n = add(KEYS[2], 'a', amt, 'h', 0, 'n', 1)
local kind = 'credit'
if amt < 0 then kind = 'adjust' end
local e = entry(KEYS[3], n, ARGV[2], ARGV[4], '', '', '', '', kind, amt, after, 0, ARGV[3])
redis.call('SET', KEYS[1], e)
return {1, e}`)

	// KEYS: open set. ARGV: now µs, limit, prefix. Returns {j, s, b, r, d, …} for each open,
	// unbound hold whose deadline is before now, earliest first.
	scriptLedgerOverdue = newScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, id in ipairs(ids) do
  local h = redis.call('HMGET', ARGV[3] .. 'lh:' .. id, 'j', 's', 'b', 'r', 'd')
  if h[1] then
    out[#out+1] = h[1]
    out[#out+1] = h[2]
    out[#out+1] = h[3] or ''
    out[#out+1] = h[4] or ''
    out[#out+1] = h[5] or ''
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out`)
)
