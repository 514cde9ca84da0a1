package caddymodule

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/mediagw/mediagw/internal/hdr"
)

// acceptGzip is the Accept-Encoding value of every attempt that asks for gzip. It is shared by
// all of them: the http transport only reads a request's header values.
var acceptGzip = []string{"gzip"}

// asksGzip reports whether an attempt asks its upstream for gzip, by the rule net/http's
// transport follows when it asks by itself: compression not turned off, and neither a Range
// request (a part of a gzip stream does not decode) nor a HEAD request.
func (t *ProxyTransport) asksGzip(req *http.Request) bool {
	return t.gzip && req.Method != http.MethodHead && hdr.Get(req.Header, "Range") == ""
}

// decodeGzip undoes the gzip of an answer to an attempt that asked for it, as net/http does for
// the requests it asks for gzip itself: the body is decoded as it is read, and the answer loses
// its Content-Encoding and Content-Length (its length once decoded is unknown). An answer without
// a body (a 204, a 304, a Content-Length of 0, or an HTTP/2 stream that ended with its headers:
// a ContentLength of 0 or net/http's NoBody) is left as it is, as net/http leaves it.
func decodeGzip(resp *http.Response) {
	if resp.ContentLength == 0 || resp.Body == http.NoBody || !strings.EqualFold(hdr.Get(resp.Header, "Content-Encoding"), "gzip") {
		return
	}
	resp.Body = &gunzipBody{body: resp.Body}
	delete(resp.Header, "Content-Encoding")
	delete(resp.Header, "Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
}

// gunzipBody is a gzip answer's body, decoded as it is read, as net/http decodes the answers to
// the requests it asks gzip for itself: the decoder is made at the first Read, and its error (an
// answer that is not gzip) is kept for every later Read. A Close, also during a Read (a client
// that left), closes the answer's body, which ends that Read; a Read after Close fails.
type gunzipBody struct {
	body    io.ReadCloser
	decoder *gzip.Reader // made by the first Read
	err     error        // the decoder's making failed
	closed  atomic.Bool
}

var errReadAfterClose = errors.New("read on a closed answer body")

func (g *gunzipBody) Read(p []byte) (int, error) {
	if g.closed.Load() {
		return 0, errReadAfterClose
	}
	if g.decoder == nil {
		if g.err == nil {
			g.decoder, g.err = gzip.NewReader(g.body)
		}
		if g.err != nil {
			return 0, g.err
		}
	}
	return g.decoder.Read(p)
}

// Close closes the answer's body.
func (g *gunzipBody) Close() error {
	g.closed.Store(true)
	return g.body.Close()
}
