package storage

import (
	"context"
	"sync"
	"time"
)

// readLogs are Badger's read logs, in memory: Badger serves one process, whose watchers die with
// it, and so do their logs; a restarted process reads every task at once, which it may, having
// made none of the reads before. leases holds the owners of the leases that guard them
// (badger_leases.go).
type readLogs struct {
	mu     sync.Mutex
	logs   map[string]*readLog
	leases leaseBook
}

// readLog is one shard's read log: when each task was last read (Unix nanoseconds), and when it
// was last trimmed. (A log is trimmed when its records may be older than keep, whatever Trim
// says: the logs are in memory, and trimming them costs no store call.)
type readLog struct {
	reads   map[string]int64
	trimmed int64
}

// NoteReads writes the records first and checks the leases after, in the lease book, which
// holds every lease committed before the check (leaseBook): a lease taken after the check is
// taken after the records were written, so its taker finds them; a lease found taken refuses
// the group, and its records are put back as they were.
func (b *Badger) NoteReads(_ context.Context, owner string, at time.Time, keep time.Duration, groups []ShardReads) ([]int, error) {
	when := at.UnixNano()
	prev := b.reads.note(when, keep, groups)
	lost, err := b.notHeld(owner, groups)
	if err != nil {
		lost = make([]int, len(groups))
		for i := range lost {
			lost[i] = i
		}
	}
	b.reads.unnote(when, groups, lost, prev)
	return lost, err
}

func (b *Badger) RecentReads(_ context.Context, log string, since time.Time) (map[string]time.Time, error) {
	return b.reads.recent(log, since.UnixNano()), nil
}

// note records the reads of groups at when and drops, now and then, those older than keep. It
// returns the records it replaced, in the order of the groups' ids (0: none).
func (l *readLogs) note(when int64, keep time.Duration, groups []ShardReads) (prev []int64) {
	n := 0
	for _, g := range groups {
		n += len(g.IDs)
	}
	prev = make([]int64, 0, n)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logs == nil {
		l.logs = map[string]*readLog{}
	}
	for _, g := range groups {
		log := l.logs[g.Log]
		if log == nil {
			log = &readLog{reads: make(map[string]int64, len(g.IDs)), trimmed: when}
			l.logs[g.Log] = log
		}
		for _, id := range g.IDs {
			was := log.reads[id]
			prev = append(prev, was)
			if was < when {
				log.reads[id] = when
			}
		}
		if when-log.trimmed > int64(keep) {
			for id, at := range log.reads {
				if at < when-int64(keep) {
					delete(log.reads, id)
				}
			}
			log.trimmed = when
		}
	}
	return prev
}

// unnote puts back what note replaced at when in the groups at the indexes lost (unless a later
// record replaced it since).
func (l *readLogs) unnote(when int64, groups []ShardReads, lost []int, prev []int64) {
	if len(lost) == 0 {
		return
	}
	start := make([]int, len(groups)) // where each group's ids start in prev
	for i := 1; i < len(groups); i++ {
		start[i] = start[i-1] + len(groups[i-1].IDs)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, i := range lost {
		log := l.logs[groups[i].Log]
		if log == nil {
			continue
		}
		for j, id := range groups[i].IDs {
			switch was := prev[start[i]+j]; {
			case log.reads[id] != when:
			case was == 0:
				delete(log.reads, id)
			default:
				log.reads[id] = was
			}
		}
	}
}

// recent returns the reads of log at or after since.
func (l *readLogs) recent(log string, since int64) map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]time.Time{}
	if rl := l.logs[log]; rl != nil {
		for id, at := range rl.reads {
			if at >= since {
				out[id] = time.Unix(0, at)
			}
		}
	}
	return out
}

// Interface guards
var _ ReadLogs = (*Badger)(nil)
