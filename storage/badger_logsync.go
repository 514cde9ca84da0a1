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
// Calls may overlap (groupSync runs up to maxOverlap at once): each syncs every log that is
// not known to be complete and on disk, and a handle is closed only when no call uses it.
type logSync struct {
	db  *badger.DB
	dir string
	// now tells the time (time.Now; tests set it).
	now func() time.Time

	mu sync.Mutex
	// open holds the handles of the logs not yet synced since they were replaced.
	open map[string]*logHandle
	// sealed names the logs of replaced memtables, synced since: they never change again.
	sealed map[string]bool
	// bigSeen is bigValues when the value log was last synced.
	bigSeen uint64
	// dirFile is a handle on dir, whose modification time tells whether to list it again.
	dirFile *os.File
	// logs is the latest listing of the memtable logs, made at listedAt while dirTime was the
	// modification time of dir.
	logs     []string
	dirTime  time.Time
	listedAt time.Time
	// listings counts the directory listings (for tests).
	listings int
}

// logHandle is a handle on a memtable log, closed when it is no longer needed (retired) and
// no sync uses it.
type logHandle struct {
	f       *os.File
	users   int
	retired bool
	closed  bool
}

// logWork is a log a sync call syncs.
type logWork struct {
	name string
	h    *logHandle
	// complete: a newer log exists, so this one never changes again.
	complete bool
}

// relistWithin: a listing made while dir's modification time was this recent is made again at
// the next sync, since a file created in the same tick of the file system's clock would not
// change that time again.
const relistWithin = time.Second

func newLogSync(db *badger.DB, dir string) *logSync {
	return &logSync{db: db, dir: dir, open: map[string]*logHandle{}, sealed: map[string]bool{}, bigSeen: bigValues.Load(), now: time.Now}
}

func (l *logSync) sync() error {
	l.mu.Lock()
	big, bigSeen := bigValues.Load(), l.bigSeen
	l.mu.Unlock()
	if big != bigSeen {
		if err := l.db.Sync(); err != nil {
			return err
		}
		l.mu.Lock()
		l.bigSeen = max(l.bigSeen, big) // bigValues only grows
		l.mu.Unlock()
	}
	if !ownLogSync {
		return l.db.Sync()
	}
	work, err := l.claim()
	if err != nil {
		return err
	}
	if len(work) == 0 {
		return l.db.Sync()
	}
	synced := 0
	for _, w := range work {
		if err = datasync(w.h.f); err != nil {
			err = fmt.Errorf("syncing %s: %w", w.h.f.Name(), err)
			break
		}
		synced++
	}
	l.release(work, synced)
	return err
}

// claim lists the logs to sync and takes a use of each one's handle; release gives them back.
// It returns no logs if it found none to sync (sync then falls back to DB.Sync).
func (l *logSync) claim() ([]logWork, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	logs, err := l.memLogs()
	if err != nil || len(logs) == 0 {
		return nil, err
	}
	var work []logWork
	for i, name := range logs {
		if l.sealed[name] {
			continue
		}
		h := l.open[name]
		if h == nil {
			f, err := os.Open(filepath.Join(l.dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue // written to a synced table and deleted meanwhile
			}
			if err != nil {
				l.releaseLocked(work, 0)
				return nil, err
			}
			h = &logHandle{f: f}
			l.open[name] = h
		}
		h.users++
		work = append(work, logWork{name: name, h: h, complete: i < len(logs)-1})
	}
	return work, nil
}

// release gives back the handles claimed, noting as sealed the complete logs among the first
// synced of them (the ones synced before an error).
func (l *logSync) release(work []logWork, synced int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(work, synced)
}

func (l *logSync) releaseLocked(work []logWork, synced int) {
	for i, w := range work {
		w.h.users--
		if i < synced && w.complete {
			// A newer log exists: this one is complete, and now on disk.
			l.sealed[w.name] = true
			l.retire(w.name)
		}
		w.h.closeIfUnused()
	}
}

// retire lets go of a log's handle: it is closed once no sync uses it.
func (l *logSync) retire(name string) {
	if h := l.open[name]; h != nil {
		delete(l.open, name)
		h.retired = true
		h.closeIfUnused()
	}
}

// closeIfUnused closes the handle once it is retired and no sync uses it.
func (h *logHandle) closeIfUnused() {
	if h.retired && h.users == 0 && !h.closed {
		h.closed = true
		// Closing a file that was only read (and synced) cannot lose anything.
		_ = h.f.Close()
	}
}

// memLogs lists the memtable logs, oldest first, again only when the directory has changed
// since the last listing (a memtable was replaced, a table written): a stat of the directory
// instead of reading it at every sync. l.mu is held.
func (l *logSync) memLogs() ([]string, error) {
	if l.dirFile == nil {
		f, err := os.Open(l.dir)
		if err != nil {
			return nil, err
		}
		l.dirFile = f
	}
	mod, err := modTime(l.dirFile)
	if err != nil {
		return nil, err
	}
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
	// Let go of the logs that are gone: flushed to a synced table and deleted.
	for name := range l.open {
		if !slices.Contains(logs, name) {
			l.retire(name)
		}
	}
	for name := range l.sealed {
		if !slices.Contains(logs, name) {
			delete(l.sealed, name)
		}
	}
	return logs, nil
}

// close releases the handles; no sync may run.
func (l *logSync) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name := range l.open {
		l.retire(name)
	}
	if l.dirFile != nil {
		// The directory was only read.
		_ = l.dirFile.Close()
		l.dirFile = nil
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
