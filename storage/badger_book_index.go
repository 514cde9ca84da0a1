package storage

import (
	"hash/maphash"
	"sync"
)

// holdIndex maps a hold's ID to the *bookHold the book keeps of it (ledgerBook.holds): a Go map
// per shard, each under its own lock, the shard chosen by the ID's last hex digit or a hash of
// it (shardOf). Every priced
// request adds its hold and takes it out again after its end is committed, and looks it up
// three times between; a sync.Map did the same with an allocation per new ID and about 2 µs of
// a request's CPU in all (the profile of BenchmarkPassThroughOverhead/priced_parallel).
//
// No method calls out while it holds a shard's lock, so that a caller may hold an account's
// lock around any of them; Range calls its function on a copy of each shard's holds, unlocked.
type holdIndex struct {
	shards [holdShards]holdShard
}

// holdSeed seeds the hash that picks a hold's shard, the same for every book of the process.
var holdSeed = maphash.MakeSeed()

// holdShards is the number of shards: enough that two cores rarely wait for one lock; one for
// each hex digit (shardOf).
const holdShards = 16

type holdShard struct {
	mu sync.Mutex
	m  map[string]*bookHold
}

// shardOf is the shard index of id: its last digit when that is a lower-case hex digit (a hold
// id the gateway makes ends in a random one, see holdIDPrefix), else a hash of it. The digit
// costs a table read where the hash costs some seventy instructions, five times a request.
func shardOf(id string) uint64 {
	if n := len(id); n > 0 {
		if d := lowerHexDigit[id[n-1]]; d < holdShards {
			return uint64(d)
		}
	}
	return maphash.String(holdSeed, id) % holdShards
}

// shard returns the shard of id, locked.
func (x *holdIndex) shard(id string) *holdShard {
	s := &x.shards[shardOf(id)]
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[string]*bookHold)
	}
	return s
}

// Load returns the hold kept under id.
func (x *holdIndex) Load(id string) (*bookHold, bool) {
	s := x.shard(id)
	h, ok := s.m[id]
	s.mu.Unlock()
	return h, ok
}

// Store keeps h under id.
func (x *holdIndex) Store(id string, h *bookHold) {
	s := x.shard(id)
	s.m[id] = h
	s.mu.Unlock()
}

// LoadOrStore returns the hold kept under id (loaded), or keeps h there.
func (x *holdIndex) LoadOrStore(id string, h *bookHold) (actual *bookHold, loaded bool) {
	s := x.shard(id)
	defer s.mu.Unlock()
	if prev, ok := s.m[id]; ok {
		return prev, true
	}
	s.m[id] = h
	return h, false
}

// CompareAndSwap keeps h under id if old is kept there.
func (x *holdIndex) CompareAndSwap(id string, old, h *bookHold) bool {
	s := x.shard(id)
	defer s.mu.Unlock()
	if prev, ok := s.m[id]; !ok || prev != old {
		return false
	}
	s.m[id] = h
	return true
}

// CompareAndDelete drops id if h is kept under it.
func (x *holdIndex) CompareAndDelete(id string, h *bookHold) bool {
	s := x.shard(id)
	defer s.mu.Unlock()
	if prev, ok := s.m[id]; !ok || prev != h {
		return false
	}
	delete(s.m, id)
	return true
}

// Range calls f for each hold kept (those of a shard as they were when it was copied) until f
// answers false.
func (x *holdIndex) Range(f func(h *bookHold) bool) {
	var holds []*bookHold
	for i := range x.shards {
		s := &x.shards[i]
		s.mu.Lock()
		holds = holds[:0]
		for _, h := range s.m {
			holds = append(holds, h)
		}
		s.mu.Unlock()
		for _, h := range holds {
			if !f(h) {
				return
			}
		}
	}
}
