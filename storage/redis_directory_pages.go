package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// scriptDirectoryIndex, the start of each page script, builds the directory's sorted-set
// indexes (kz, kn:<account>, an) from the sets that earlier versions kept, once: "dix" marks
// them built. Every key and account write keeps them from then on. ARGV[1] is the prefix. The
// build reads every key record in one script: with many thousands of keys the first page after
// an upgrade holds the server for its length (330 ms for 10,000 keys, measured on the 2-core
// build machine under load). During a rolling upgrade, a key that an instance of the earlier
// version creates after the build is missing from the pages (not from authentication) until it
// is written again.
const scriptDirectoryIndex = `
local p = ARGV[1]
if redis.call('EXISTS', p .. 'dix') == 0 then
  for _, id in ipairs(redis.call('SMEMBERS', p .. 'keys')) do
    local h = redis.call('GET', p .. 'ki:' .. id)
    local j = h and redis.call('HGET', p .. 'k:' .. h, 'j')
    if j then
      local a = cjson.decode(j).account
      redis.call('ZADD', p .. 'kz', 0, id)
      redis.call('ZADD', p .. 'kn:' .. a, 0, id)
      redis.call('ZADD', p .. 'an', 0, a)
    end
  end
  for _, n in ipairs(redis.call('SMEMBERS', p .. 'accts')) do redis.call('ZADD', p .. 'an', 0, n) end
  redis.call('SET', p .. 'dix', '1')
end
local idx, n = p .. ARGV[2], tonumber(ARGV[5])
local names
if ARGV[3] == '1' then
  local hi = '+'
  if ARGV[4] ~= '' then hi = '(' .. ARGV[4] end
  names = redis.call('ZRANGE', idx, hi, '-', 'BYLEX', 'REV', 'LIMIT', 0, n + 1)
else
  local lo = '-'
  if ARGV[4] ~= '' then lo = '(' .. ARGV[4] end
  names = redis.call('ZRANGE', idx, lo, '+', 'BYLEX', 'LIMIT', 0, n + 1)
end
local out = {'0'}
if #names > n then out[1] = '1' end
`

var (
	// ARGV: prefix, index, "1" to read backwards, cursor ("" for none), limit. Returns whether
	// more follow, then the version and JSON of each key of the page, in the order read.
	scriptKeysPage = newScript(scriptDirectoryIndex + `
for i = 1, math.min(#names, n) do
  local h = redis.call('GET', p .. 'ki:' .. names[i])
  if h then
    local rec = redis.call('HMGET', p .. 'k:' .. h, 'v', 'j')
    if rec[1] then
      out[#out + 1] = rec[1]
      out[#out + 1] = rec[2]
    end
  end
end
return out`)

	// ARGV: as scriptKeysPage's. Returns whether more follow, then the name, version and JSON
	// ("" and "" without a record) of each account of the page, in the order read.
	scriptAccountsPage = newScript(scriptDirectoryIndex + `
for i = 1, math.min(#names, n) do
  local rec = redis.call('HMGET', p .. 'a:' .. names[i], 'v', 'j')
  out[#out + 1] = names[i]
  out[#out + 1] = rec[1] or ''
  out[#out + 1] = rec[2] or ''
end
return out`)
)

// directoryPage runs a page script on index and returns whether more follow and the rest of
// its answer, in ascending order of groups of width strings.
func (r *Redis) directoryPage(ctx context.Context, s *redisScript, index string, q DirectoryPage, width int) (bool, []string, error) {
	q.normal()
	back, cursor := "0", q.After
	if q.Before != "" {
		back, cursor = "1", q.Before
	}
	// The index is named in KEYS too, which routes the script to the prefix's slot in a Cluster.
	vals, err := r.exec(ctx, s, []string{r.key(index)}, []string{r.prefix, index, back, cursor, strconv.Itoa(q.Limit)}).AsStrSlice()
	if err != nil {
		return false, nil, err
	}
	if len(vals) == 0 || (len(vals)-1)%width != 0 {
		return false, nil, errScript
	}
	more, rest := vals[0] == "1", vals[1:]
	if back == "1" { // groups read backwards: put them in ascending order
		for i, j := 0, len(rest)/width-1; i < j; i, j = i+1, j-1 {
			for k := range width {
				rest[i*width+k], rest[j*width+k] = rest[j*width+k], rest[i*width+k]
			}
		}
	}
	return more, rest, nil
}

func (r *Redis) KeysPage(ctx context.Context, q DirectoryPage) ([]APIKey, bool, error) {
	index := "kz"
	if q.Account != "" {
		index = "kn:" + q.Account
	}
	more, vals, err := r.directoryPage(ctx, scriptKeysPage, index, q, 2)
	if err != nil {
		return nil, false, err
	}
	keys := make([]APIKey, 0, len(vals)/2)
	for i := 0; i < len(vals); i += 2 {
		var k APIKey
		if err := json.Unmarshal([]byte(vals[i+1]), &k); err != nil {
			return nil, false, fmt.Errorf("redis store: decoding key record: %v", err)
		}
		if k.Version, err = strconv.ParseInt(vals[i], 10, 64); err != nil {
			return nil, false, errScript
		}
		keys = append(keys, k)
	}
	return keys, more, nil
}

func (r *Redis) AccountsPage(ctx context.Context, q DirectoryPage) ([]Account, bool, error) {
	more, vals, err := r.directoryPage(ctx, scriptAccountsPage, "an", q, 3)
	if err != nil {
		return nil, false, err
	}
	accts := make([]Account, 0, len(vals)/3)
	for i := 0; i < len(vals); i += 3 {
		a := Account{Name: vals[i]}
		if vals[i+2] != "" {
			if err := json.Unmarshal([]byte(vals[i+2]), &a); err != nil {
				return nil, false, fmt.Errorf("redis store: decoding account record: %v", err)
			}
			if a.Version, err = strconv.ParseInt(vals[i+1], 10, 64); err != nil {
				return nil, false, errScript
			}
		}
		accts = append(accts, a)
	}
	return accts, more, nil
}
