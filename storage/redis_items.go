package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// Key layout of item owners (after the prefix):
//
//	ri:<item id>    string: the owning account; expires with the claim

// scriptClaimItems claims item ids for an account. KEYS: the item records. ARGV: account,
// expire-at ms. Returns the indexes (from 1) of the keys that another account owns.
var scriptClaimItems = newScript(`
local taken = {}
for i, k in ipairs(KEYS) do
  local owner = redis.call('GET', k)
  if not owner then
    redis.call('SET', k, ARGV[1])
    redis.call('PEXPIREAT', k, ARGV[2])
  elseif owner ~= ARGV[1] then
    taken[#taken + 1] = i
  end
end
return taken`)

// scriptItemOwners reads the owners of item ids: GET each, which the gateway's minimum ACL allows
// (MGET it does not). KEYS: the item records. Returns the owners, false for none.
var scriptItemOwners = newScript(`
local owners = {}
for i, k in ipairs(KEYS) do owners[i] = redis.call('GET', k) end
return owners`)

func (r *Redis) ClaimItems(ctx context.Context, account string, ids []string, expiresAt time.Time) ([]string, error) {
	if len(ids) > MaxItemClaim {
		return nil, fmt.Errorf("redis store: %d item ids in one claim, more than %d", len(ids), MaxItemClaim)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = r.key("ri:", id)
	}
	if floor := r.now().Add(minTaskRecordTTL); expiresAt.Before(floor) {
		expiresAt = floor
	}
	// Claims that too few replicas confirmed stay on the master: the call fails (the answer is
	// withheld), and a retry by the same account claims them again.
	res, unconfirmed := r.execDurable(ctx, scriptClaimItems, keys, []string{account, itoa(expiresAt.UnixMilli())})
	vals, err := res.ToArray()
	if err != nil {
		return nil, err
	}
	if unconfirmed != nil {
		return nil, unconfirmed
	}
	var taken []string
	for _, v := range vals {
		i, err := v.AsInt64()
		if err != nil || i < 1 || int(i) > len(ids) {
			return nil, errScript
		}
		taken = append(taken, ids[i-1])
	}
	return taken, nil
}

func (r *Redis) ItemOwners(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) > MaxItemClaim {
		return nil, fmt.Errorf("redis store: %d item ids in one read, more than %d", len(ids), MaxItemClaim)
	}
	owners := make([]string, len(ids))
	if len(ids) == 0 {
		return owners, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = r.key("ri:", id)
	}
	vals, err := r.exec(ctx, scriptItemOwners, keys, nil).ToArray()
	if err != nil {
		return nil, err
	}
	if len(vals) != len(ids) {
		return nil, errScript
	}
	for i, v := range vals {
		if owner, err := v.ToString(); err == nil {
			owners[i] = owner
		} else if !rueidis.IsRedisNil(err) {
			return nil, err
		}
	}
	return owners, nil
}

// Interface guards
var _ Items = (*Redis)(nil)
