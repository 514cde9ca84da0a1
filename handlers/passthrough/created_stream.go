package passthrough

import (
	"bytes"
	"cmp"

	"go.uber.org/zap"
)

// The streamed (SSE) side of CreatedWriter: events are held one by one until complete, read for
// ids, and sent.

// events sends every complete held event, recording first what it needs recorded.
func (cw *CreatedWriter) events() error {
	for cw.mode == modeEvents {
		b := cw.pending.Bytes()
		from := max(cw.scanned-3, 0) // a separator may straddle two writes
		end := eventEnd(b[from:])
		if end < 0 {
			cw.scanned = len(b)
			if len(b) > cmp.Or(cw.eventLimit, maxPendingEvent) {
				return cw.oversized()
			}
			return nil
		}
		end += from
		cw.scanned = 0
		if err := cw.event(b[:end]); err != nil {
			cw.failed = true
			cw.logger.Error("recording the owner of a streamed answer's ids failed; stream cut", zap.Error(err))
			return err
		}
		if cw.record == nil && cw.claim == nil {
			cw.mode = modePass
			return cw.release()
		}
		if err := cw.send(end); err != nil {
			return err
		}
	}
	return nil
}

// event records what one complete event needs recorded before it is sent: the created object's
// id, the first time an event carries one, and the collected item ids before an event that
// carries a response.
func (cw *CreatedWriter) event(event []byte) error {
	e, ok := readEvent(event)
	if !ok {
		return nil
	}
	if cw.record != nil {
		objectID := e.ID
		if e.Response != nil && e.Response.ID != "" {
			objectID = e.Response.ID
		}
		if objectID != "" {
			if err := cw.record(objectID, nil); err != nil {
				return err
			}
			cw.record = nil
		}
	}
	if cw.claim == nil {
		return nil
	}
	if cw.items.add(e.items()) {
		cw.logger.Warn("too many items in one answer; the rest are not recorded", zap.Int("limit", maxAnswerItems))
	}
	if e.Response != nil {
		return cw.claimItems()
	}
	return nil
}

// claimItems records the collected item ids that are not recorded yet, in one batch.
func (cw *CreatedWriter) claimItems() error {
	if cw.claim == nil || len(cw.items.pending) == 0 {
		return nil
	}
	if err := cw.claim(cw.items.pending); err != nil {
		return err
	}
	cw.items.pending = cw.items.pending[:0]
	return nil
}

// oversized handles an event too large to hold: what it carries cannot be read. Its object id,
// if any, stays unrecorded; the item ids collected so far are recorded before any of its bytes is
// sent, then it passes through, and the events after it are read again.
func (cw *CreatedWriter) oversized() error {
	cw.logger.Warn("server-sent event too large to read its ids; passed through unrecorded", zap.Int("limit", maxPendingEvent))
	if cw.claim == nil {
		cw.mode = modePass
		return cw.release()
	}
	if err := cw.claimItems(); err != nil {
		cw.failed = true
		cw.logger.Error("recording the owner of a streamed answer's items failed; stream cut", zap.Error(err))
		return err
	}
	cw.mode = modeSkip
	return cw.skip()
}

// skip sends the held bytes of an event too large to read, up to its end, and then reads the
// events after it again. The last bytes stay held while the end may straddle two writes.
func (cw *CreatedWriter) skip() error {
	b := cw.pending.Bytes()
	from := max(cw.scanned-3, 0)
	end := eventEnd(b[from:])
	if end < 0 {
		n := max(len(b)-3, 0)
		cw.scanned = len(b) - n
		return cw.send(n)
	}
	end += from
	cw.scanned = 0
	if err := cw.send(end); err != nil {
		return err
	}
	cw.mode = modeEvents
	return cw.events()
}

// send sends the first n held bytes.
func (cw *CreatedWriter) send(n int) error {
	cw.sendHeader()
	if n == 0 {
		return nil
	}
	_, err := cw.ResponseWriter.Write(cw.pending.Next(n))
	return err
}

// eventEnd returns the length of the first complete event in b, through the blank line that ends
// it, or -1. A line ends with "\r\n", "\n" or "\r" (the SSE rule), and an event ends where a line
// end follows another one at once: "\n\n", "\r\n\r\n", "\n\r\n", "\r\r" and the like. A "\r"
// at the end of b ends a line there: should a "\n" follow in the next write, the event after this
// one begins with a line end, which only ends an empty event. One pass over the lines: each line's
// end is a fast byte search for a line feed, and one for a carriage return before it.
func eventEnd(b []byte) int {
	lineEnded := false // a line end stands right before i
	for i := 0; ; {
		t := bytes.IndexByte(b[i:], '\n')
		if t < 0 {
			t = len(b) - i
		}
		if cr := bytes.IndexByte(b[i:i+t], '\r'); cr >= 0 {
			t = cr
		}
		t += i
		if t == len(b) {
			return -1
		}
		end := t + 1
		if b[t] == '\r' && end < len(b) && b[end] == '\n' {
			end++
		}
		if t == i && lineEnded {
			return end
		}
		lineEnded, i = true, end
	}
}
