package imageedit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/jsonkeys"
	"github.com/mediagw/mediagw/storage"
)

// A query's answer longer than heldAnswer goes on to the client as it comes, in pieces, while
// answerStream reads it: its JSON is checked (jsonkeys.Validator) and its top-level status, the
// items of its data and its size and quality are kept (usage.DataItems), as pass-through reads
// the long answer of an image task's query (passthrough.ObjectWatch). The last bytes read are
// held back until the next piece has been searched for the upstream's credentials (see
// providers.Upstream.Echoes), so that no part of one quoted in the answer goes on. When the
// answer has ended whole and valid, quoting no credential, the task's end it shows is settled,
// then its last bytes go on; an answer that is not so (cut by the provider, past max_answer,
// malformed, quoting a credential) is cut off without them, where that is found: the client sees
// its answer end early (short of the declared Content-Length, and before its JSON closes), and
// the query ends nothing.

// streamPiece is the size of the pieces an answer is read in.
const streamPiece = 32 << 10

// maxCountedItems bounds the items of a long answer's data that its end is charged for: more
// than any provider makes for one request.
const maxCountedItems = 10_000

// answerStream reads a long answer as it passes (see above).
type answerStream struct {
	upstream *providers.Upstream
	keep     int    // the bytes held back: the longest a credential may be spelled in the answer
	pending  []byte // read and searched, not yet passed on
	sent     int    // the bytes of pending passed on since the last piece
	items    usage.DataItems
	valid    jsonkeys.Validator
	echoed   bool
}

func newAnswerStream(u *providers.Upstream) *answerStream {
	longest := 0
	for _, c := range u.Credentials() {
		longest = max(longest, len(c))
	}
	// A byte of a credential is at most 18 bytes of the answer (a percent escape, each of its
	// three characters written as a \u escape); a character outside ASCII as a surrogate pair
	// is 12 bytes for 4.
	return &answerStream{upstream: u, keep: 18*longest + 12}
}

// next reads piece and returns what may go on now, which stays valid until the next call.
func (s *answerStream) next(piece []byte) []byte {
	s.pending = s.pending[:copy(s.pending, s.pending[s.sent:])]
	s.sent = 0
	s.items.Write(piece)
	s.valid.Write(piece)
	s.pending = append(s.pending, piece...)
	if !s.echoed && s.upstream.Echoes(s.pending) {
		s.echoed = true
	}
	if s.echoed {
		return nil
	}
	// What is held back starts after a byte other than a backslash, so that it is searched with
	// its escapes read as the whole answer's are (within a bound: a run of backslashes).
	cut := len(s.pending) - s.keep
	for floor := cut - s.keep; cut > 0 && cut > floor && s.pending[cut-1] == '\\'; cut-- {
	}
	if cut <= 0 {
		return nil
	}
	s.sent = cut
	return s.pending[:cut]
}

// whole reports whether the answer read is one valid JSON text that quotes no credential: its
// held-back end may go on.
func (s *answerStream) whole() bool { return s.valid.Valid() && !s.echoed }

// held is the answer's held-back end.
func (s *answerStream) held() []byte { return s.pending[s.sent:] }

// streamAnswer passes on a long answer (first, then rest) as it comes, as passOn would (status,
// application/json, nosniff), and settles the end of t that it shows (see above). Its client
// going away does not stop the reading: the answer is read to its end, and settled.
func (h *Handler) streamAnswer(w http.ResponseWriter, r *http.Request, t storage.Task, p *providers.Upstream, ans upstream.Answer, rest *upstream.Rest) error {
	if c := bytes.TrimLeft(ans.Body, " \t\r\n"); len(c) == 0 || c[0] != '{' {
		return upstream.ErrUnreadable // not a task's answer: never passed on as the provider typed it
	}
	s := newAnswerStream(p)
	out := s.next(ans.Body)
	ans.Body = nil
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if rest.Declared >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(rest.Declared, 10))
	}
	w.WriteHeader(ans.Status)
	client := true
	write := func(b []byte) {
		if _, err := w.Write(b); client && err != nil {
			client = false // the client left: read on for the task's end
		}
	}
	write(out)
	piece := make([]byte, streamPiece)
	var err error
	for err == nil && !s.echoed && !s.valid.Failed() {
		var n int
		n, err = rest.Read(piece)
		if client {
			write(s.next(piece[:n]))
		} else {
			s.next(piece[:n])
		}
	}
	switch {
	case s.echoed:
		h.Logger.Error("an image task's answer quotes the upstream's credential: cut off before it", zap.String("task_id", t.ID), zap.String("upstream", p.Label()))
		return nil
	case !s.valid.Failed() && !errors.Is(err, io.EOF):
		h.Logger.Warn("an image task's answer ended early: cut off", zap.String("task_id", t.ID), zap.Error(err))
		return nil
	case !s.whole():
		h.Logger.Warn("an image task's answer is not one valid JSON object: cut off", zap.String("task_id", t.ID), zap.String("upstream", p.Label()))
		return nil
	}
	if t.Active && !t.Finished {
		h.finishedByScan(r.Context(), t.ID, &s.items)
	}
	if client {
		write(s.held())
	}
	return nil
}

// finishedByScan ends the image task taskID when items, read from a whole answer of its query,
// show it final (see finishedByAnswer), unless a member read is ambiguous. The answer stands
// for one of its top-level status, size and quality, and as many items in data (at most
// maxCountedItems).
func (h *Handler) finishedByScan(ctx context.Context, taskID string, items *usage.DataItems) {
	if !items.Complete() || items.Ambiguous() {
		return
	}
	n, _ := items.Count()
	size, quality := items.Reported()
	summary, err := json.Marshal(struct {
		Status  string     `json:"status"`
		Size    string     `json:"size,omitempty"`
		Quality string     `json:"quality,omitempty"`
		Data    []struct{} `json:"data"`
	}{items.Status(), size, quality, make([]struct{}, min(n, maxCountedItems))})
	if err != nil {
		h.Logger.Error("summing up an image task's answer failed", zap.String("task_id", taskID), zap.Error(err))
		return
	}
	h.finishedByAnswer(ctx, taskID, summary)
}
