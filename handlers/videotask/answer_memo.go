package videotask

import (
	"encoding/json"
	"sync"
)

// answerMemo remembers, per task, an upstream answer (by fingerprint) that the stored record
// already says, and the record's version then. The watcher reads thousands of tasks that do not
// change: when a task's record has kept its version and the upstream answers the same bytes
// again, the answer says what the record says, and building the client's answer to compare them
// (the larger part of the work per task) is skipped. A nil memo remembers nothing.
type answerMemo struct {
	mu   sync.Mutex
	seen map[string]memoEntry
}

type memoEntry struct {
	version     int64
	fingerprint uint64
}

// unchanged reports whether the record at version already says what this answer says.
func (m *answerMemo) unchanged(id string, version int64, fingerprint uint64) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.seen[id]
	return ok && e.version == version && e.fingerprint == fingerprint
}

// note records that the record at version says what the answer of this fingerprint says.
func (m *answerMemo) note(id string, version int64, fingerprint uint64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]memoEntry{}
	}
	m.seen[id] = memoEntry{version: version, fingerprint: fingerprint}
}

// forget drops a task that finished or left this watcher.
func (m *answerMemo) forget(id string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, id)
}

// fingerprint is a hash of an upstream answer's fields that does not depend on their order: the
// sum of a hash of each field (FNV-1a, 64 bits, of its key and value, each followed by a zero
// byte that keeps them apart, its bits then spread by splitmix64's finalizer so that the sum of
// two fields does not cancel out). Unordered, it needs neither the keys sorted nor a slice to
// sort them in: the watcher takes one of every answer it reads.
func fingerprint(answer map[string]json.RawMessage) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	var sum uint64
	for k, v := range answer {
		h := uint64(offset)
		for i := range len(k) {
			h = (h ^ uint64(k[i])) * prime
		}
		h *= prime // ^ 0
		for _, c := range v {
			h = (h ^ uint64(c)) * prime
		}
		h *= prime
		h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
		h = (h ^ h>>27) * 0x94d049bb133111eb
		sum += h ^ h>>31
	}
	return sum
}
