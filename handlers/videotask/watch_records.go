package videotask

import "github.com/mediagw/mediagw/storage"

// The records the watcher holds between polls (Watcher.records): a poll starts from the record
// of a task as the watcher last saw it, the create's or the one its previous poll read or wrote,
// instead of reading it from the store; the compare-and-set of a change catches a change made
// meanwhile elsewhere.

// maxHeldRecords bounds the records that a watcher holds for the next polls of their tasks
// (about a kilobyte each with the client's answer, the strings of a new task's shared with the
// create; a larger one is not held: see maxHeldRecordBytes): about 50 MB. Beyond it, a poll reads
// the record from the store.
const maxHeldRecords = 50_000

// maxHeldRecordBytes bounds the parts of a held record that grow with the client's request or
// the upstream's answer (holdable): a larger record, such as an adaptor task's canonical request
// with a long prompt or inline media (up to the create's 1 MiB), is read from the store at each
// poll instead, so that the held records take at most about maxHeldRecords × (2 KiB and the few
// hundred bytes of the record's ids and names), some 125 MB.
const maxHeldRecordBytes = 2 << 10

// holdable reports whether t's record is small enough to hold (maxHeldRecordBytes).
func holdable(t *storage.Task) bool {
	return len(t.Request)+len(t.Result)+len(t.Usage)+len(t.Keep)+len(t.CallbackURL)+len(t.HoldUsage)+len(t.HoldPrice) <= maxHeldRecordBytes
}

// maxHeldPolls is how often a task's record is read from the store again: every maxHeldPolls-th
// poll of an unchanged task reads it (the maxHeldPolls-1 polls before it start from the held
// record). A change made by another instance (or by a client through
// one) is caught at once by the compare-and-set of the next change that the upstream's answer
// makes; this read catches it when the answer does not change (a record deleted meanwhile, a
// client's recent read that spares the next upstream read), and bounds how long a held record
// may be out of date.
const maxHeldPolls = 8

// heldRecord is a task's record as the watcher last saw it, and how many polls started from it
// since it was read from or written to the store.
type heldRecord struct {
	t     storage.Task
	polls int
}

// maxSpareRecords bounds the held records that polls took and that the next records held are
// kept in (Watcher.spare): a poll takes up to MaxRefreshBatch, and holds as many again.
const maxSpareRecords = 4 * MaxRefreshBatch

// heldOf is a record to hold t in, polls polls after it was read or written: one that a poll
// took (takeHeld) when there is one, so that holding a record at every poll of a task allocates
// none (a record is some 450 bytes). The caller holds w.mu.
func (w *Watcher) heldOf(t storage.Task, polls int) *heldRecord {
	n := len(w.spare)
	if n == 0 {
		return &heldRecord{t: t, polls: polls}
	}
	r := w.spare[n-1]
	w.spare[n-1] = nil
	w.spare = w.spare[:n-1]
	*r = heldRecord{t: t, polls: polls}
	return r
}

// release keeps r, which no map holds any more, for heldOf. The caller holds w.mu.
func (w *Watcher) release(r *heldRecord) {
	*r = heldRecord{} // nothing of the task kept alive
	if len(w.spare) < maxSpareRecords {
		w.spare = append(w.spare, r)
	}
}

// takeHeld splits the ids of a poll into the records held for it (forgotten here; polls says how
// many polls each has served) and the ids whose records are to be read: those not held, and
// those whose records have served maxHeldPolls-1 polls.
func (w *Watcher) takeHeld(ids []string) (known []storage.Task, polls map[string]int, unknown []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.forgotten) > 0 {
		for _, id := range ids {
			delete(w.forgotten, id) // this poll starts from the store, or from a record held since
		}
	}
	if len(w.records) == 0 {
		return nil, nil, ids
	}
	polls = make(map[string]int, len(ids))
	known = make([]storage.Task, 0, len(ids))
	for _, id := range ids {
		r, ok := w.records[id]
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		delete(w.records, id)
		if r.polls >= maxHeldPolls-1 {
			unknown = append(unknown, id)
		} else {
			known = append(known, r.t)
			polls[id] = r.polls
		}
		w.release(r)
	}
	return known, polls, unknown
}

// hold holds the records that a poll's refresh left current (seenRecord), for the next polls of
// their tasks, before those are scheduled. A record this poll took from held (polls has it)
// and that nothing changed has served one more poll; one read or written by the poll, none. A
// task whose record forgetHeld dropped meanwhile (a client's refresh) holds none: its next poll
// reads the record that refresh wrote.
func (w *Watcher) hold(records []seenRecord, polls map[string]int) {
	if len(records) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range records {
		if w.forgotten[r.t.ID] {
			continue
		}
		if !holdable(&r.t) {
			delete(w.records, r.t.ID) // grown past the bound: its next poll reads the store
			continue
		}
		n, fromHeld := polls[r.t.ID]
		if r.fresh || !fromHeld {
			n = -1
		}
		if held, ok := w.records[r.t.ID]; ok {
			*held = heldRecord{t: r.t, polls: n + 1}
		} else if len(w.records) < maxHeldRecords {
			w.records[r.t.ID] = w.heldOf(r.t, n+1)
		}
	}
}

// holdAgain holds again the records of tasks that a poll took (takeHeld) but did not read: all
// of them when the poll failed, those left to a later poll when it was paced. Each is held
// unless the task has a record held again meanwhile (its later poll may have begun).
func (w *Watcher) holdAgain(tasks []storage.Task, polls map[string]int) {
	if len(tasks) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range tasks {
		if _, ok := w.records[t.ID]; !ok && w.tracked[t.ID] && !w.forgotten[t.ID] && len(w.records) < maxHeldRecords && holdable(&t) {
			w.records[t.ID] = w.heldOf(t, polls[t.ID])
		}
	}
}

// forgetHeld forgets the record held for the next poll of a task (see Watch) that a refresh or
// a delete is about to change, so that the watcher's next poll reads the record and sees a
// client's read (a task polled recently is not polled again before its Interval has passed). A
// poll of the task under way then holds no record for the next one either.
func (w *Watcher) forgetHeld(id string) {
	w.init()
	w.mu.Lock()
	if len(w.records) > 0 {
		delete(w.records, id)
	}
	if w.tracked[id] {
		w.forgotten[id] = true
	}
	w.mu.Unlock()
}
