package passthrough

import (
	"context"
	"time"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// A video that pass-through creates is charged by how it ended (see
// accounting.Accountant.ObjectFinished): the record of the video carries its create's hold, and
// the change that marks the record finished decides, once, whoever stores it:
//
//   - a retrieve that shows it completed (or succeeded) settles the hold at the length and
//     picture the answer reports (OpenAI's video object has its seconds and size; a video
//     generation's answer its duration, resolution and ratio, or size), the estimate standing
//     in for what it does not report;
//   - a remix of it that the provider accepts shows it completed too (OpenAI remixes only a
//     completed video): it is settled at the length and picture its record keeps (see
//     SourceCompleted);
//   - one that shows it failed (or cancelled, canceled, expired: the provider made nothing)
//     releases it in full;
//   - a 2xx DELETE settles it at the estimate: OpenAI deletes only a completed or failed video,
//     and the answer does not say which;
//   - a video whose end nobody sees is settled at its estimate when its lease (DefaultSlotLease
//     after its create) has ended: by the lease sweep of a key at its limit (EndLapsedSlots), or
//     by LapsedHeldObjects, which the hold reconciler runs on every pass (and which ends image
//     tasks so too).

// Reported is the length and picture that the answer Finish read reports, when it shows the
// video completed (or succeeded); else nothing. An answer whose fields repeat reports nothing,
// and a length of 0 or less is not one. For an image task it is the images the answer reports
// (ImageTaskReported).
//
// An answer too large to hold (read as it passed, see ObjectWatch) reports, for an image task,
// the count of the items of its data and its size and quality; for a video, nothing: its
// estimate is charged.
func (ow *ObjectWatch) Reported(t storage.Task) billing.Usage {
	if ow.streamed != nil {
		if t.Kind != storage.KindImage || ow.streamed.Ambiguous() {
			return billing.Usage{}
		}
		n, _ := ow.streamed.Count()
		size, quality := ow.streamed.Reported()
		return imageTaskMade(t, n, size, quality)
	}
	if t.Kind == storage.KindImage {
		return ImageTaskReported(t, ow.body.Bytes())
	}
	if !createsVideo(Endpoint{Creates: t.Kind}) || (t.Status != "completed" && t.Status != "succeeded") {
		return billing.Usage{}
	}
	return videoReported(ow.body.Bytes())
}

// videoReported is the length and picture a video's answer reports (see videoSizing, which
// reads them as a create's fields are read). A length that names none (0, -1), and a picture
// named twice with two resolutions or ratios, count as not reported.
func videoReported(answer []byte) billing.Usage {
	fields, err := readFields(answer, videoPricedFields)
	if err != nil {
		return billing.Usage{}
	}
	v := videoSizing(jsonVideoValue(&fields))
	var u billing.Usage
	if d := v.Duration; d != nil && *d > 0 {
		u.VideoSeconds = *d
	}
	if v.Frames > 0 {
		u.VideoSeconds = framesSeconds(v.Frames)
	}
	if v.Planned.Resolution == "" {
		u.Resolution, u.Ratio = v.Resolution, v.Ratio
	}
	if u.Ratio == billing.AdaptiveRatio {
		u.Ratio = "" // two ratios: the estimate's
	}
	return u
}

// SourceCompleted marks finished, as completed, the video that route remixes, when it still holds
// its slot: call it when the provider accepted the remix (its answer's id was recorded), which
// OpenAI does for a completed video only. It returns the source's record, the length and picture
// to settle its hold at (those its record keeps, see videoMade), and true when this call stored
// the change: the caller then ends the source (accounting.Accountant.ObjectFinishedAs), once.
func (rt *Router) SourceCompleted(ctx context.Context, route Route) (storage.Task, billing.Usage, bool, error) {
	if route.remixOf == "" {
		return storage.Task{}, billing.Usage{}, false, nil
	}
	t, won, err := rt.finishObject(ctx, route.remixOf, "completed", func(storage.Task) bool { return true })
	if !won {
		return t, billing.Usage{}, false, err
	}
	return t, sourceMade(t), true, err
}

// carriesCreateHold reports whether records of a kind may carry their create's hold: those of
// the videos and video generations that pass-through creates, and of image tasks. The gateway's
// own video tasks (mediagw_videos) are ended by its task watcher, not by LapsedHeldObjects.
func carriesCreateHold(kind string) bool {
	return createsVideo(Endpoint{Creates: kind}) || kind == storage.KindImage
}

// AllOwners is Owners with the search of every account's records (storage.Tasks.SearchAllTasks),
// which LapsedHeldObjects reads.
type AllOwners interface {
	Owners
	SearchAllTasks(ctx context.Context, q storage.TaskSearch) (storage.TaskSearchPage, error)
}

// Bounds of one LapsedHeldObjects pass.
const (
	// lapsedPage is how many lapsed records one search answers.
	lapsedPage = 100
	// lapsedScan bounds the records one search reads.
	lapsedScan = 2000
)

// LapsedHeldObjects ends the held objects that pass-through creates (videos, video generations)
// and the image tasks (see image_end.go) whose record still carries its create's hold when its
// lease (DefaultSlotLease after its create) has ended, the client never having asked for the
// object again: each is marked finished (status
// lease_ended) by compare-and-set, and Finished, called with each record this sweep's change
// stored, gives back its slot and settles its hold at the estimate (the provider most likely
// made, and billed, it). Run Pass from one instance at a time (the hold reconciler's lease); two
// at once still end each object once.
type LapsedHeldObjects struct {
	Owners AllOwners
	// Finished ends each object this sweep finished (accounting.Accountant.ObjectFinished).
	Finished func(ctx context.Context, t storage.Task)

	// A sweep reads the records created from swept to upTo (Unix seconds), newest first, over
	// as many passes as it takes; cursor is where the next pass goes on ("" starts a sweep).
	// Once a sweep is through, every record created up to its upTo has been read after its
	// lease ended: the next sweep starts there.
	swept, upTo int64
	cursor      string
}

// Pass reads at most lapsedScan records whose lease ended by now and that no earlier sweep of
// this LapsedHeldObjects read, going on where the last pass stopped, and ends those that still
// carry a hold. It returns how many it ended.
func (s *LapsedHeldObjects) Pass(ctx context.Context, now time.Time) (int, error) {
	ended := 0
	rt := &Router{Owners: s.Owners, Now: func() time.Time { return now }}
	leaseEnded := now.Add(-DefaultSlotLease)
	lapsed := func(t storage.Task) bool {
		return t.HoldID != "" && !time.Unix(t.CreatedAt, 0).After(leaseEnded)
	}
	if s.cursor == "" {
		s.upTo = leaseEnded.Unix()
	}
	page, err := s.Owners.SearchAllTasks(ctx, storage.TaskSearch{Status: statusActive, From: s.swept, To: s.upTo,
		Before: s.cursor, Limit: lapsedPage, Scan: lapsedScan})
	if err != nil {
		return 0, err
	}
	for _, t := range page.Tasks {
		if !lapsed(t) || !carriesCreateHold(t.Kind) {
			continue
		}
		stored, won, err := rt.finishObject(ctx, t.ID, statusLapsed, lapsed)
		if err != nil {
			return ended, err
		}
		if won {
			ended++
			s.Finished(ctx, stored)
		}
	}
	if s.cursor = page.Next; s.cursor == "" {
		s.swept = s.upTo
	}
	return ended, nil
}
