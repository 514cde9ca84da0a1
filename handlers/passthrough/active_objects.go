package passthrough

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/jsonkeys"
	"github.com/mediagw/mediagw/storage"
)

// The asynchronous objects that pass-through creates (a POST /v1/videos, a remix, a POST
// /v1/video/generations, an image generation answered with a task id) go on running upstream
// after their create was answered, as the gateway's own video tasks do. Each holds one of its
// key's active-task slots (max_active_tasks), taken before the create is forwarded and kept when
// the answer's id is recorded as the caller's (Route.Slot; given back when no id is recorded: an
// error, a synchronous image answer). The slot is given back, once, by whoever stores the change
// that marks the object's record finished, at the first of:
//
//   - a retrieve of the object (GET /v1/videos/{id}, /v1/video/generations/{id},
//     /v1/images/tasks/{id}) answered 2xx with a final top-level status: completed, succeeded,
//     failed, cancelled, canceled or expired, in any case;
//   - a DELETE of the object answered 2xx;
//   - the end of its lease (DefaultSlotLease after its create), found when the key next reaches
//     its limit: before answering 429 the gateway gives back the slots of the key's objects
//     whose lease has ended, and tries once more.

// DefaultSlotLease bounds how long a pass-through object holds its active-task slot when no
// retrieve or delete shows it finished.
const DefaultSlotLease = time.Hour

// statusActive is the stored status of a pass-through object's record while it holds a slot;
// the change that gives the slot back stores the final status seen (or statusLapsed).
const (
	statusActive = "active"
	statusLapsed = "lease_ended"
)

// Bounds of the slot bookkeeping.
const (
	// maxStatusAnswer bounds the part of a retrieve's answer read for its status.
	maxStatusAnswer = 64 << 10
	// maxLapsedScan bounds the slot-holding records of an account read by one lease sweep.
	maxLapsedScan = 1000
	// lapsedSweepEvery spaces two lease sweeps of one key by this instance, so that a key at
	// its limit does not make every refused create read the account's records.
	lapsedSweepEvery = time.Minute
	// maxSweptKeys bounds the keys whose last sweep an instance remembers.
	maxSweptKeys = 10_000
	// maxFinishAttempts bounds the compare-and-set retries of one finish.
	maxFinishAttempts = 16
)

// runsAsync reports whether objects of a kind run on after their create: they hold a slot.
func runsAsync(kind string) bool {
	switch kind {
	case KindVideo, KindVideoGeneration, storage.KindImage:
		return true
	}
	return false
}

// TakesSlot reports whether the route's create makes an asynchronous object, which holds one of
// the key's active-task slots: take one (accounting.Accountant.StartTask) and put it in
// route.Slot before Router.Created wraps the answer; give it back unless CreatedWriter.KeptSlot.
func (route Route) TakesSlot() bool { return runsAsync(route.Creates) }

// finalStatuses are the top-level statuses of a retrieve's answer that end an object.
var finalStatuses = []string{"completed", "succeeded", "failed", "cancelled", "canceled", "expired"}

// ObjectWatch sits between reverse_proxy and the client on a retrieve or delete of a
// slot-holding object: it passes the answer on unchanged and keeps the first maxStatusAnswer
// bytes of a 2xx one, which Finish reads.
type ObjectWatch struct {
	http.ResponseWriter
	rt       *Router
	objectID string
	deletes  bool
	status   int
	body     bytes.Buffer
}

// WatchObject wraps w when the routed call is a retrieve or delete of an object that holds a
// slot (see TakesSlot); otherwise it returns nil.
func (rt *Router) WatchObject(w http.ResponseWriter, route Route) *ObjectWatch {
	if route.watched == "" {
		return nil
	}
	return &ObjectWatch{ResponseWriter: w, rt: rt, objectID: route.watched, deletes: route.watchDeletes}
}

func (ow *ObjectWatch) WriteHeader(status int) {
	if ow.status == 0 && status >= 200 {
		ow.status = status
	}
	ow.ResponseWriter.WriteHeader(status)
}

func (ow *ObjectWatch) Write(p []byte) (int, error) {
	if ow.status == 0 {
		ow.status = http.StatusOK
	}
	if ow.status/100 == 2 && !ow.deletes && ow.body.Len() < maxStatusAnswer {
		ow.body.Write(p[:min(len(p), maxStatusAnswer-ow.body.Len())])
	}
	return ow.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes, deadlines).
func (ow *ObjectWatch) Unwrap() http.ResponseWriter { return ow.ResponseWriter }

// Finish marks the object's record finished when the answer showed it over (see the rules
// above), by compare-and-set. It returns the record and true when this call stored that change:
// the caller then gives back the object's slot (accounting.Accountant.ObjectFinished), once.
func (ow *ObjectWatch) Finish(ctx context.Context) (storage.Task, bool, error) {
	if ow.status/100 != 2 {
		return storage.Task{}, false, nil
	}
	status := "deleted"
	if !ow.deletes {
		status = answerStatus(ow.body.Bytes())
		if status == "" {
			return storage.Task{}, false, nil
		}
	}
	return ow.rt.finishObject(ctx, ow.objectID, status, func(storage.Task) bool { return true })
}

// answerStatus returns the lower-cased top-level status of a JSON answer when it is final, or "".
// An answer whose status is ambiguous (repeated, or in another case) is not final.
func answerStatus(body []byte) string {
	m, err := jsonkeys.Members(body, "status")
	if err != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m["status"], &s) != nil {
		return ""
	}
	s = strings.ToLower(s)
	for _, f := range finalStatuses {
		if s == f {
			return s
		}
	}
	return ""
}

// finishObject stores, by compare-and-set, the change that marks a slot-holding record finished
// with status, when ends agrees on the current record. It reports whether this call stored it.
func (rt *Router) finishObject(ctx context.Context, id, status string, ends func(storage.Task) bool) (storage.Task, bool, error) {
	for range maxFinishAttempts {
		t, err := rt.Owners.Task(ctx, id)
		if err != nil || !t.Active || t.Finished || !ends(t) {
			return t, false, err
		}
		next := t
		next.Finished, next.Status, next.UpdatedAt = true, status, rt.now().Unix()
		stored, err := rt.Owners.ReplaceTask(ctx, next)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		return stored, err == nil, err
	}
	return storage.Task{}, false, storage.ErrConflict
}

// EndLapsedSlots marks finished the key's slot-holding objects whose lease (DefaultSlotLease)
// has ended, and returns the records whose change it stored: the caller gives
// back their slots. Call it when the key is at its limit; one instance sweeps a key at most once
// a minute (later calls return nothing until then), and reads at most maxLapsedScan of the
// account's slot-holding records, oldest first: those are the ones whose lease can have ended,
// however many newer ones the account holds.
func (rt *Router) EndLapsedSlots(ctx context.Context, id auth.Identity) ([]storage.Task, error) {
	now := rt.now()
	if !rt.sweeps.due(id.KeyID, now) {
		return nil, nil
	}
	page, err := rt.Owners.ListTasks(ctx, id.Account, storage.TaskQuery{Status: statusActive, PageSize: maxLapsedScan, Oldest: true, NoTotal: true})
	if err != nil {
		return nil, err
	}
	lapsed := func(t storage.Task) bool {
		return t.KeyID == id.KeyID && !now.Before(time.Unix(t.CreatedAt, 0).Add(DefaultSlotLease))
	}
	var ended []storage.Task
	for _, t := range page.Tasks {
		if !lapsed(t) || !t.Active || t.Finished {
			continue
		}
		stored, won, err := rt.finishObject(ctx, t.ID, statusLapsed, lapsed)
		if err != nil {
			return ended, err
		}
		if won {
			ended = append(ended, stored)
		}
	}
	return ended, nil
}

// sweepTimes remembers when this instance last swept each key's lapsed slots.
type sweepTimes struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether a key's sweep may run now, and if so notes it.
func (s *sweepTimes) due(keyID string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.last[keyID]; ok && now.Sub(t) < lapsedSweepEvery {
		return false
	}
	if s.last == nil || len(s.last) >= maxSweptKeys {
		s.last = map[string]time.Time{}
	}
	s.last[keyID] = now
	return true
}

// Interface guards
var _ http.ResponseWriter = (*ObjectWatch)(nil)
