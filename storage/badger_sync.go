package storage

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// maxGather bounds how long a sync waits for the durable commits in progress to end, so that
// it covers them too.
const maxGather = time.Millisecond

// groupSync lets concurrent committers share one disk sync. A committer needs a sync that
// started after its commit; whoever finds none running starts one, the others wait for it.
// Before it starts, the sync waits (at most maxGather) for the durable commits in progress to
// end, since each of those would otherwise need a sync of its own right after: under load one
// sync then covers every create in flight, and a lone commit does not wait at all.
type groupSync struct {
	// sync makes every commit made before it started durable.
	sync func() error
	// maxGather, when set (tests), replaces the package's maxGather.
	maxGather time.Duration
	mu        sync.Mutex
	cond      *sync.Cond
	started   uint64 // syncs started
	done      uint64 // the latest sync finished (by number)
	running   bool
	err       error // of the latest finished sync
	// pending counts the durable commits in progress (between begin and end); gathered, while
	// a sync waits for them, is closed when the last one ends.
	pending  int
	gathered chan struct{}
}

// begin notes a durable commit starting; call end when it has committed (or failed).
func (g *groupSync) begin() {
	g.mu.Lock()
	g.pending++
	g.mu.Unlock()
}

func (g *groupSync) end() {
	g.mu.Lock()
	g.pending--
	if g.pending == 0 && g.gathered != nil {
		close(g.gathered)
		g.gathered = nil
	}
	g.mu.Unlock()
}

// wait returns once a sync that started after the caller's commit has finished.
func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	need := g.started + 1 // a sync that starts from now on covers this commit
	for g.done < need {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		g.gather() // commits that end meanwhile are covered: the sync has not started
		g.started++
		n := g.started
		g.mu.Unlock()
		err := g.sync()
		g.mu.Lock()
		g.running, g.done, g.err = false, n, err
		g.cond.Broadcast()
	}
	return g.err
}

// gather waits, with g.mu held on entry and on return, until no durable commit is in progress,
// or maxGather has passed.
func (g *groupSync) gather() {
	if g.pending == 0 {
		return
	}
	gathered := make(chan struct{})
	g.gathered = gathered
	g.mu.Unlock()
	d := maxGather
	if g.maxGather > 0 {
		d = g.maxGather
	}
	t := time.NewTimer(d)
	select {
	case <-gathered:
	case <-t.C:
	}
	t.Stop()
	g.mu.Lock()
	if g.gathered == gathered {
		g.gathered = nil
	}
}

// syncs is the number of disk syncs started so far.
func (g *groupSync) syncs() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}

// valueThreshold is Badger's ValueThreshold as mediagw sets it: a value of this size or more is
// written to Badger's value log, smaller ones only to the memtable's write-ahead log.
const valueThreshold = 1 << 20

// bigValues counts the values of valueThreshold bytes or more written by any store of this
// process (see entry); a log sync that sees it change syncs the value log too.
var bigValues atomic.Uint64

// memLogSuffix ends the name of Badger's memtable write-ahead logs: <dir>/<number>.mem.
const memLogSuffix = ".mem"

// logSync makes every write that Badger has committed so far durable, by syncing the files that
// hold it: the write-ahead logs of Badger's memtables, through file handles of its own.
//
// Badger without SyncWrites writes each commit into the log of the current memtable, a file
// mapped into memory, and deletes the log only after the memtable was written to a table and
// that table synced. DB.Sync syncs the current log (and the value log) while holding the lock
// that Badger's writer takes before each write: for the whole disk sync no write is applied,
// and every read, queued behind the waiting writer, waits too. It also leaves alone the log of a
// memtable replaced by a new one but not yet written to a table. logSync instead calls
// fdatasync on the log files, the same system call msync of Badger's mapping amounts to, with
// no Badger lock held, so that writes and reads go on while the disk syncs; a log of a replaced
// memtable is synced once more after it was replaced, then no longer.
//
// The value log holds only values of valueThreshold bytes or more, which mediagw hardly ever
// writes; after such a write logSync calls DB.Sync as well. If no memtable log is found (a
// Badger version with another layout), and on systems other than Linux, it falls back to
// DB.Sync.
//
// Calls must not overlap (groupSync runs one at a time).
type logSync struct {
	db  *badger.DB
	dir string
	// open holds the handles of the logs not yet synced since they were replaced.
	open map[string]*os.File
	// sealed names the logs of replaced memtables, synced since: they never change again.
	sealed map[string]bool
	// bigSeen is bigValues when the value log was last synced.
	bigSeen uint64
	// logs is the latest listing of the memtable logs, made at listedAt while dirTime was the
	// modification time of dir.
	logs     []string
	dirTime  time.Time
	listedAt time.Time
	// now tells the time (time.Now; tests set it).
	now func() time.Time
	// listings counts the directory listings (for tests).
	listings int
}

// relistWithin: a listing made while dir's modification time was this recent is made again at
// the next sync, since a file created in the same tick of the file system's clock would not
// change that time again.
const relistWithin = time.Second

func newLogSync(db *badger.DB, dir string) *logSync {
	return &logSync{db: db, dir: dir, open: map[string]*os.File{}, sealed: map[string]bool{}, bigSeen: bigValues.Load(), now: time.Now}
}

func (l *logSync) sync() error {
	if n := bigValues.Load(); n != l.bigSeen {
		if err := l.db.Sync(); err != nil {
			return err
		}
		l.bigSeen = n
	}
	if !ownLogSync {
		return l.db.Sync()
	}
	logs, err := l.memLogs()
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		return l.db.Sync()
	}
	for i, name := range logs {
		if l.sealed[name] {
			continue
		}
		f := l.open[name]
		if f == nil {
			f, err = os.Open(filepath.Join(l.dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // written to a synced table and deleted meanwhile
			}
			if err != nil {
				return err
			}
			l.open[name] = f
		}
		if err := datasync(f); err != nil {
			return fmt.Errorf("syncing %s: %w", f.Name(), err)
		}
		if i < len(logs)-1 {
			// A newer log exists: this one is complete, and now on disk.
			l.sealed[name] = true
			l.forget(name)
		}
	}
	for name := range l.open {
		if !slices.Contains(logs, name) {
			l.forget(name)
		}
	}
	for name := range l.sealed {
		if !slices.Contains(logs, name) {
			delete(l.sealed, name)
		}
	}
	return nil
}

// memLogs lists the memtable logs, oldest first, again only when the directory has changed
// since the last listing (a memtable was replaced, a table written): a stat of the directory
// instead of reading it at every sync.
func (l *logSync) memLogs() ([]string, error) {
	fi, err := os.Stat(l.dir)
	if err != nil {
		return nil, err
	}
	mod := fi.ModTime()
	// What counts is how long after the directory's change the listing was made, not how long
	// ago the change was: a file created within the same tick after the listing leaves the time
	// as it was, and a listing that may have missed it must not be reused however quiet it is.
	if l.logs != nil && mod.Equal(l.dirTime) && l.listedAt.Sub(mod) > relistWithin {
		return l.logs, nil
	}
	listedAt := l.now()
	logs, err := memLogs(l.dir)
	if err != nil {
		return nil, err
	}
	l.logs, l.dirTime, l.listedAt = logs, mod, listedAt
	l.listings++
	return logs, nil
}

// forget closes the handle of a log that needs no more syncs.
func (l *logSync) forget(name string) {
	if f := l.open[name]; f != nil {
		// Closing a file that was only read (and synced) cannot lose anything.
		_ = f.Close()
		delete(l.open, name)
	}
}

// close releases the handles.
func (l *logSync) close() {
	for name := range l.open {
		l.forget(name)
	}
}

// memLogs lists the memtable logs in dir, oldest first.
func memLogs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type log struct {
		name string
		n    uint64
	}
	var logs []log
	for _, e := range entries {
		num, ok := strings.CutSuffix(e.Name(), memLogSuffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		logs = append(logs, log{e.Name(), n})
	}
	slices.SortFunc(logs, func(a, b log) int { return cmp.Compare(a.n, b.n) })
	names := make([]string, len(logs))
	for i, lg := range logs {
		names[i] = lg.name
	}
	return names, nil
}
