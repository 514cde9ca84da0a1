package passthrough

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"slices"

	"github.com/mediagw/mediagw/handlers/idempotency"
)

// A create that may make an asynchronous object (Route.TakesSlot: a video, a video generation, an
// image generation, whether answered with a task id or its images) and sends one Idempotency-Key is
// run once per key by the gateway itself (mediagw_route's idempotency guard), before its hold
// and its active-task slot are taken: an SDK's retry of a create it gave up on is answered with
// the first attempt's kept answer, never refused for the slot that attempt's object holds, and
// never held or charged again. What a retry must match is Route.RequestHash.

// idempotentCreate reports whether r is such a create (route.Creates is set from its endpoint).
func idempotentCreate(r *http.Request, route *Route) bool {
	return route.TakesSlot() && len(r.Header[idempotencyKeyHeader]) == 1
}

// requestHash is the hash a retry of the create r must match: its method, the path and raw query
// the client called (both are forwarded), and its body as checked (a form by its parts, see
// formDigest; other bodies by their bytes). It is "" when r is no idempotent create, or its body
// cannot be read again.
func requestHash(r *http.Request, calledPath, calledQuery string, route *Route) string {
	if route.IdempotencyKey == "" || !route.TakesSlot() {
		return ""
	}
	// The method, path and query hold no zero byte (net/url refuses control characters); the
	// body, which may, comes last behind its kind.
	switch {
	case route.bodyDigest != nil:
		return idempotency.HashOf(r.Method, calledPath, calledQuery, "form", route.bodyDigest)
	case r.GetBody != nil:
		body, err := replayedBytes(r)
		if err != nil {
			return ""
		}
		// A JSON body counts without its insignificant whitespace: an SDK ends what it sends
		// with a newline, which a first attempt sent otherwise may not have.
		var compact bytes.Buffer
		if json.Compact(&compact, body) == nil {
			return idempotency.HashOf(r.Method, calledPath, calledQuery, "json", compact.Bytes())
		}
		return idempotency.HashOf(r.Method, calledPath, calledQuery, "bytes", body)
	}
	return idempotency.HashOf(r.Method, calledPath, calledQuery, "none")
}

// formDigest digests a form's parts as the canonical form writes them: each part's header (its
// names and values, sorted) and the SHA-256 of its content, in order. A client that sends the
// same form again (with another boundary, other part headers the gateway drops) digests the same.
type formDigest struct {
	all, content hash.Hash
	open         bool
}

func newFormDigest() *formDigest { return &formDigest{all: sha256.New(), content: sha256.New()} }

// part ends the part before and starts one with header h; its content goes to the writer returned.
func (d *formDigest) part(h textproto.MIMEHeader) io.Writer {
	d.end()
	d.open = true
	d.all.Write(binary.BigEndian.AppendUint64(nil, uint64(len(h))))
	for _, name := range slices.Sorted(maps.Keys(h)) {
		d.all.Write(binary.BigEndian.AppendUint64(nil, uint64(len(h[name]))))
		for _, v := range append([]string{name}, h[name]...) {
			d.all.Write(binary.BigEndian.AppendUint64(nil, uint64(len(v))))
			d.all.Write([]byte(v))
		}
	}
	return d.content
}

// end ends the open part, if any.
func (d *formDigest) end() {
	if d.open {
		d.all.Write(d.content.Sum(nil))
		d.content.Reset()
		d.open = false
	}
}

// sum is the digest of the parts written so far.
func (d *formDigest) sum() []byte {
	d.end()
	return d.all.Sum(nil)
}
