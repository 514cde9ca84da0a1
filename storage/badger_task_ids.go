package storage

import (
	"hash/maphash"
	"math/bits"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// A task create must refuse an id that has a record already, whoever's. Reading Badger for it
// looks through both memtables and every level for a key that, for a new task, is nowhere: a
// few µs of cache misses per create. taskCreates keeps, in front of that read, a filter of the
// ids of every task record in the store (a Bloom filter: it answers "no record" only when
// there is none, and "maybe" for about one id in a hundred that has none), so that a create
// reads Badger only on a "maybe".
//
// The filter holds the ids that a scan of the task records found and every id claimed by a
// create since that scan began; it is complete because every new task record of the store is
// written by a create of this process (Badger locks its directory), under its id's claim, and
// a create's write is committed (visible to a later scan) before its claim is given back. The
// ids claimed when a scan begins are added with it, for their writes may come after its
// snapshot. Until the first scan after the open ends, every create reads Badger. The filter
// is sized for four times the ids its scan found (at least 65,536), about 5 bytes per id with a
// record; when it holds that many, a new scan, in the background, makes a new one without the
// records that expired meanwhile. A scan reads the task records' table blocks, values included,
// under one read transaction (0.2–0.5 s per 300,000 tasks on the project's build machine:
// BenchmarkBadgerTaskIDScan), so a store keeping L tasks scans about once per 3L creates.

// taskCreates are the IDs of the task creates in progress in this process, and the filter of
// the ids that have a record.
type taskCreates struct {
	mu sync.Mutex
	// m maps a task id whose create is in progress to a channel closed when it ends, made by
	// the first create that waits for it (nil until then: an uncontended create allocates
	// nothing).
	m map[string]chan struct{}
	// ids is the filter of the ids with a record; its db is nil when there is none (a create
	// then always reads Badger).
	ids taskIDs
}

// taskIDs is the filter of the ids with a task record (guarded by taskCreates.mu).
type taskIDs struct {
	db     *badger.DB
	logger *zap.Logger
	seed   maphash.Seed
	// active answers once the first scan has ended (nil before).
	active *idFilter
	// scanning is set while a scan runs; pending are the hashes of the ids claimed since it
	// began (and of those claimed when it began), for its filter.
	scanning bool
	pending  []uint64
	closed   bool
	stop     chan struct{}
	scans    sync.WaitGroup
}

// startTaskIDs sets up the filter of the ids of db's task records and starts its first scan.
// Every create of db must go through c's claim from now on.
func (c *taskCreates) startTaskIDs(db *badger.DB, logger *zap.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = taskIDs{db: db, logger: logger, seed: maphash.MakeSeed(), stop: make(chan struct{})}
	c.scanLocked()
}

// claim waits until no other create of the task id is in progress and takes the id; release
// gives it back. It reports whether the id may have a record (false: surely none, no read of
// Badger needed), and adds the id to the filter.
func (c *taskCreates) claim(id string) (mayExist bool) {
	c.mu.Lock()
	for {
		ch, busy := c.m[id]
		if !busy {
			break
		}
		if ch == nil {
			ch = make(chan struct{})
			c.m[id] = ch
		}
		c.mu.Unlock()
		<-ch
		c.mu.Lock()
	}
	if c.m == nil {
		c.m = make(map[string]chan struct{})
	}
	c.m[id] = nil
	mayExist = c.checkAndAddLocked(id)
	c.mu.Unlock()
	return mayExist
}

// release gives back the id of a create that claim let in.
func (c *taskCreates) release(id string) {
	c.mu.Lock()
	ch := c.m[id]
	delete(c.m, id)
	c.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// checkAndAddLocked reports whether the filter may have the id (true when there is no filter
// yet, or none), and adds it to the filter and to the scan's, starting a new scan when the
// filter is full.
func (c *taskCreates) checkAndAddLocked(id string) (mayExist bool) {
	ids := &c.ids
	if ids.db == nil {
		return true
	}
	h := maphash.String(ids.seed, id)
	mayExist = ids.active == nil || ids.active.has(h)
	if ids.scanning {
		ids.pending = append(ids.pending, h)
	}
	if ids.active != nil {
		ids.active.add(h)
		if ids.active.full() && !ids.scanning {
			c.scanLocked()
		}
	}
	return mayExist
}

// scanLocked starts a scan of the task records, which replaces the filter when it ends. The ids
// claimed now go into its filter (their writes may come after its snapshot).
func (c *taskCreates) scanLocked() {
	ids := &c.ids
	if ids.closed {
		return
	}
	ids.scanning = true
	ids.pending = ids.pending[:0]
	for id := range c.m {
		ids.pending = append(ids.pending, maphash.String(ids.seed, id))
	}
	ids.scans.Add(1)
	go c.scan()
}

// scan reads the id of every task record, makes the filter of them and the ids claimed
// meanwhile, and makes it the filter. A failed scan leaves the filter as it was (with none,
// creates go on reading Badger), and the next full filter tries again.
func (c *taskCreates) scan() {
	defer c.ids.scans.Done()
	var found []uint64
	err := c.ids.db.View(func(txn *badger.Txn) error {
		n := 0
		return scanKeys(txn, prefixTask, func(key []byte) error {
			if n++; n%4096 == 0 {
				select {
				case <-c.ids.stop:
					return errStop
				default:
				}
			}
			found = append(found, maphash.Bytes(c.ids.seed, key[len(prefixTask):]))
			return nil
		})
	})
	f := newIDFilter(4 * len(found))
	for _, h := range found {
		f.add(h)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids.scanning = false
	if err != nil {
		if err != errStop {
			c.ids.logger.Error("scanning the task ids for the create filter; creates read the store", zap.Error(err))
		}
		c.ids.pending = nil
		return
	}
	for _, h := range c.ids.pending {
		f.add(h)
	}
	c.ids.pending = nil
	c.ids.active = f
}

// closeTaskIDs stops a scan in progress and waits for it; no other starts.
func (c *taskCreates) closeTaskIDs() {
	c.mu.Lock()
	if c.ids.db != nil && !c.ids.closed {
		c.ids.closed = true
		close(c.ids.stop)
	}
	c.mu.Unlock()
	c.ids.scans.Wait()
}

// idFilter is a blocked Bloom filter of 64-bit id hashes: each id sets 7 bits of one 512-bit
// block (one cache line), 10 bits per id of its capacity, for about 1 % of false "maybe"s when
// full.
type idFilter struct {
	blocks []idFilterBlock
	n, cap int
}

type idFilterBlock [8]uint64

// minIDFilter is the least capacity of an idFilter.
const minIDFilter = 1 << 16

// newIDFilter is an empty filter for capacity ids (at least minIDFilter).
func newIDFilter(capacity int) *idFilter {
	capacity = max(capacity, minIDFilter)
	return &idFilter{blocks: make([]idFilterBlock, (capacity*10+511)/512), cap: capacity}
}

// full reports whether the filter holds its capacity.
func (f *idFilter) full() bool { return f.n >= f.cap }

// bits is the block of h and the 7 bit positions in it: the block from h's high half, the
// positions from 9-bit slices of a second hash mixed from h.
func (f *idFilter) bits(h uint64) (*idFilterBlock, uint64) {
	hi, _ := bits.Mul64(h, uint64(len(f.blocks)))
	return &f.blocks[hi], bits.RotateLeft64(h, 32) * 0x9e3779b97f4a7c15
}

func (f *idFilter) add(h uint64) {
	b, g := f.bits(h)
	for range 7 {
		b[g&511>>6] |= 1 << (g & 63)
		g >>= 9
	}
	f.n++
}

func (f *idFilter) has(h uint64) bool {
	b, g := f.bits(h)
	for range 7 {
		if b[g&511>>6]&(1<<(g&63)) == 0 {
			return false
		}
		g >>= 9
	}
	return true
}
