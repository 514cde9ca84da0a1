package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
)

// Key layout of the directory (after the prefix):
//
//	k:<hash>   hash {v, j}: an API key record, by the SHA-256 of its secret
//	ki:<id>    string: the hash of the key with that id
//	keys       set: every key id
//	a:<name>   hash {v, j}: an account record
//	accts      set: every account name with a record
//	kz         sorted set (all scores 0, so in byte order): every key id
//	kn:<name>  sorted set (likewise): the ids of the account's keys
//	an         sorted set (likewise): every account with a record or a key
//	dix        string: set once the three indexes above hold what the sets held (see
//	           scriptDirectoryIndex)
//	dv         integer: raised by every key or account write (DirectoryVersion)

func (r *Redis) CreateKey(ctx context.Context, key APIKey) (APIKey, error) {
	key.Version = 1
	js, err := json.Marshal(key)
	if err != nil {
		return APIKey{}, err
	}
	rec := r.key("k:", key.Hash)
	res, unconfirmed := r.execDurable(ctx, scriptCreateKey,
		[]string{rec, r.key("ki:", key.ID), r.key("keys"), r.key("dv")},
		[]string{string(js), key.ID, key.Hash, r.prefix, key.Account})
	n, err := res.AsInt64()
	if err != nil {
		return APIKey{}, err
	}
	if n == 0 {
		return APIKey{}, ErrExists
	}
	r.wrote(rec)
	r.wrote(r.key("dv"))
	if unconfirmed != nil {
		return APIKey{}, unconfirmed
	}
	return key, nil
}

func (r *Redis) UpdateKey(ctx context.Context, key APIKey) (APIKey, error) {
	want := key.Version
	key.Version = want + 1
	js, err := json.Marshal(key)
	if err != nil {
		return APIKey{}, err
	}
	res, unconfirmed := r.execDurable(ctx, scriptUpdateKey,
		[]string{r.key("ki:", key.ID), r.key("dv")},
		[]string{itoa(want), string(js), key.Hash, r.prefix, key.ID, key.Account})
	n, err := res.AsInt64()
	if err != nil {
		return APIKey{}, err
	}
	switch n {
	case 1:
		r.wrote(r.key("k:", key.Hash))
		r.wrote(r.key("dv"))
		if unconfirmed != nil {
			return APIKey{}, unconfirmed
		}
		return key, nil
	case 0:
		return APIKey{}, ErrConflict
	case -1:
		return APIKey{}, ErrNotFound
	case -3:
		return APIKey{}, fmt.Errorf("updating key %s: the hash of a key never changes", key.ID)
	}
	return APIKey{}, errScript
}

func (r *Redis) DeleteKey(ctx context.Context, id string) error {
	res, unconfirmed := r.execDurable(ctx, scriptDeleteKey,
		[]string{r.key("ki:", id), r.key("keys"), r.key("dv")},
		[]string{id, r.prefix})
	hash, err := res.ToString()
	if isNil(err) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	r.wrote(r.key("k:", hash))
	r.wrote(r.key("dv"))
	return unconfirmed
}

// KeyByHash reads the client-side cache (see Redis).
func (r *Redis) KeyByHash(ctx context.Context, hash string) (APIKey, error) {
	return r.keyRecord(ctx, hash, true)
}

func (r *Redis) keyRecord(ctx context.Context, hash string, cached bool) (APIKey, error) {
	v, js, err := r.readRecord(ctx, r.key("k:", hash), cached)
	if err != nil {
		return APIKey{}, err
	}
	var k APIKey
	if err := json.Unmarshal(js, &k); err != nil {
		return APIKey{}, fmt.Errorf("redis store: decoding key record: %v", err)
	}
	k.Version = v
	return k, nil
}

func (r *Redis) KeyByID(ctx context.Context, id string) (APIKey, error) {
	hash, err := r.client.Do(ctx, r.client.B().Get().Key(r.key("ki:", id)).Build()).ToString()
	if isNil(err) {
		return APIKey{}, ErrNotFound
	}
	if err != nil {
		return APIKey{}, err
	}
	return r.keyRecord(ctx, hash, false)
}

func (r *Redis) ListKeys(ctx context.Context) ([]APIKey, error) {
	ids, err := r.client.Do(ctx, r.client.B().Smembers().Key(r.key("keys")).Build()).AsStrSlice()
	if err != nil {
		return nil, err
	}
	sort.Strings(ids)
	keys := make([]APIKey, 0, len(ids))
	for _, id := range ids {
		k, err := r.KeyByID(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// listRecords calls fn with each member of a name set and the given field of its hash record
// under recordPrefix (nil when the record is missing), in one script.
func (r *Redis) listRecords(ctx context.Context, set, recordPrefix, field string, fn func(name string, data []byte) error) error {
	vals, err := r.exec(ctx, scriptListRecords, []string{set}, []string{recordPrefix, field}).ToArray()
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(vals); i += 2 {
		name, err := vals[i].ToString()
		if err != nil {
			return err
		}
		var data []byte
		if !vals[i+1].IsNil() {
			s, err := vals[i+1].ToString()
			if err != nil {
				return err
			}
			data = []byte(s)
		}
		if err := fn(name, data); err != nil {
			return err
		}
	}
	return nil
}

func (r *Redis) SaveAccount(ctx context.Context, acct Account) (Account, error) {
	want := acct.Version
	acct.Version = want + 1
	js, err := json.Marshal(acct)
	if err != nil {
		return Account{}, err
	}
	rec := r.key("a:", acct.Name)
	res, unconfirmed := r.execDurable(ctx, scriptSaveAccount,
		[]string{rec, r.key("accts"), r.key("dv")},
		[]string{itoa(want), string(js), acct.Name, r.prefix})
	n, err := res.AsInt64()
	if err != nil {
		return Account{}, err
	}
	if n != 1 {
		return Account{}, ErrConflict
	}
	r.wrote(rec)
	r.wrote(r.key("dv"))
	if unconfirmed != nil {
		return Account{}, unconfirmed
	}
	return acct, nil
}

// Account reads the client-side cache (see Redis).
func (r *Redis) Account(ctx context.Context, name string) (Account, error) {
	v, js, err := r.readRecord(ctx, r.key("a:", name), true)
	if err != nil {
		return Account{}, err
	}
	var a Account
	if err := json.Unmarshal(js, &a); err != nil {
		return Account{}, fmt.Errorf("redis store: decoding account record: %v", err)
	}
	a.Version = v
	return a, nil
}

func (r *Redis) ListAccounts(ctx context.Context) ([]Account, error) {
	var accts []Account
	err := r.listRecords(ctx, r.key("accts"), r.key("a:"), "j", func(name string, js []byte) error {
		if js == nil {
			return nil
		}
		var a Account
		if err := json.Unmarshal(js, &a); err != nil {
			return fmt.Errorf("redis store: decoding account record: %v", err)
		}
		accts = append(accts, a)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The stored JSON carries the version it was written with.
	sort.Slice(accts, func(i, j int) bool { return accts[i].Name < accts[j].Name })
	return accts, nil
}

// DirectoryVersion reads the client-side cache: the server invalidates it on every change.
func (r *Redis) DirectoryVersion(ctx context.Context) (uint64, error) {
	key := r.key("dv")
	var s string
	var err error
	if r.fresh(key) {
		s, err = r.client.Do(ctx, r.client.B().Get().Key(key).Build()).ToString()
	} else {
		s, err = r.client.DoCache(ctx, r.client.B().Get().Key(key).Cache(), MaxDirectoryStaleness).ToString()
	}
	if isNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(s, 10, 64)
}
