package upstream

import (
	"context"
	"errors"
	"io"
	"time"
)

// CallHeld is Call for an answer that may be long (an image task's, whose data carries its
// images as b64_json): it holds no more than held bytes of it. A successful answer of up to held
// bytes is answered whole, with rest nil, as Call answers it; a longer one (up to MaxAnswer, past
// which it is ErrTooLarge when its declared length says so) is answered with its first bytes (at
// least held) in Body and the rest of it open in rest, which the caller reads and closes. An
// answer of any other status is read up to held (ErrUnreadable past it). The HTTP client's
// Timeout bounds the call up to its answer's first bytes, then each read of rest, not the whole
// of it: rest goes on at the pace of whoever reads it (a client on a slow link), however long;
// Until bounds it all.
func (c Client) CallHeld(ctx context.Context, p Target, method, rel string, held int64) (Answer, *Rest, error) {
	return c.call(ctx, p, method, rel, nil, nil, max(held, 1))
}

// Rest is the part of a successful answer that CallHeld did not read. Reading past the client's
// MaxAnswer (counted from the answer's first byte) is ErrTooLarge; a read past the call's
// deadline is ErrTimeout.
type Rest struct {
	body   io.ReadCloser
	left   int64 // the bytes that may still be read within MaxAnswer
	cancel context.CancelFunc
	ctx    context.Context
	// pieces ends the call when a read takes longer than timeout (see boundByPiece).
	pieces  *time.Timer
	timeout time.Duration
	// Declared is the length of the whole answer that the provider declared (Content-Length),
	// or -1.
	Declared int64
}

func (r *Rest) Read(p []byte) (int, error) {
	if r.pieces != nil {
		r.pieces.Reset(r.timeout)
		defer r.pieces.Stop()
	}
	if int64(len(p)) > r.left+1 {
		p = p[:r.left+1]
	}
	n, err := r.body.Read(p)
	if r.left -= int64(n); r.left < 0 {
		return 0, ErrTooLarge
	}
	if err != nil && !errors.Is(err, io.EOF) && (isTimeout(err) || timedOut(r.ctx)) {
		err = ErrTimeout
	}
	return n, err
}

// Close closes the answer and ends its call.
func (r *Rest) Close() error {
	err := r.body.Close()
	r.cancel()
	return err
}

// boundByPiece is bound for CallHeld: ctx bounded by Until, and by pieces, a timer of the HTTP
// client's Timeout (nil without one) that ends ctx as its deadline would, running from now.
func (c Client) boundByPiece(ctx context.Context) (context.Context, context.CancelFunc, *time.Timer) {
	var cancelUntil context.CancelFunc = func() {}
	if !c.Until.IsZero() {
		ctx, cancelUntil = context.WithDeadline(ctx, c.Until)
	}
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() {
		cancelCause(context.Canceled)
		cancelUntil()
	}
	if c.HTTP.Timeout <= 0 {
		return ctx, cancel, nil
	}
	pieces := time.AfterFunc(c.HTTP.Timeout, func() { cancelCause(context.DeadlineExceeded) })
	return ctx, func() { pieces.Stop(); cancel() }, pieces
}

// readHeld reads up to held bytes of a successful answer of declared length (-1 when unknown).
// When it ends within them, its bytes are returned; else the bytes read (held and one more) and
// the rest of the answer, which cancel ends when it is closed.
func readHeld(ctx context.Context, cancel context.CancelFunc, body io.ReadCloser, declared, held, limit int64) ([]byte, *Rest, error) {
	b, err := readAnswer(io.LimitReader(body, held+1), min(declared, held+1), held+1)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > limit {
		return nil, nil, errAnswerTooLarge
	}
	if int64(len(b)) <= held {
		return b, nil, nil
	}
	return b, &Rest{body: body, left: limit - int64(len(b)), cancel: cancel, ctx: ctx, Declared: declared}, nil
}
