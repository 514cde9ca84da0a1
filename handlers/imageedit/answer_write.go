package imageedit

import (
	"errors"
	"net/http"
	"time"
)

// A provider answer held in the answer budget (see Handler.Budget) is given back only once it
// is written to the client, so its write is bounded: a client that stops reading must not hold
// the budget, and with it every account's image edits and queries, for as long as it keeps its
// connection open. The answer is written in parts of answerPart bytes, each of which must reach
// the connection within answerStall (a client reading at least answerPart bytes every
// answerStall keeps up), and the whole within answerWriteBase plus its size at answerMinRate
// bytes a second. A write past either is given up: the connection is closed, and the answer's
// bytes go back to the budget.
const (
	answerPart      = 64 << 10
	answerStall     = 10 * time.Second
	answerWriteBase = 30 * time.Second
	answerMinRate   = 256 << 10
)

// writeAnswer writes body to w within the bounds above. It reports the write's error (the client
// gone, or too slow).
func writeAnswer(w http.ResponseWriter, body []byte) error {
	rc := http.NewResponseController(w)
	now := time.Now()
	end := now.Add(answerWriteBase + time.Duration(len(body)/answerMinRate)*time.Second)
	bounded := rc.SetWriteDeadline(earlier(end, now.Add(answerStall))) == nil
	if bounded {
		// A connection kept alive must not carry the bound to its next request.
		defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	}
	for len(body) > 0 {
		part := body[:min(len(body), answerPart)]
		if bounded {
			if err := rc.SetWriteDeadline(earlier(end, time.Now().Add(answerStall))); err != nil {
				return err
			}
		}
		if _, err := w.Write(part); err != nil {
			// The rest is still handed to w, in one write that fails at once (or by the
			// deadline): a writer that keeps a copy of the answer (the idempotency guard's, for
			// a retry) keeps it whole, never a cut one that a retry would get as the whole.
			_, _ = w.Write(body[len(part):])
			return err
		}
		body = body[len(part):]
	}
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// earlier is the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
