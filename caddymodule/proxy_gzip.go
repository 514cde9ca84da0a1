package caddymodule

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

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

// gunzipBody is a gzip answer's body, decoded as it is read. Its decoder is taken from a pool
// at the first Read and goes back at Close; a Close during a Read (a client that left) leaves it
// to that Read to put back.
type gunzipBody struct {
	body io.ReadCloser

	mu      sync.Mutex
	decoder *gzip.Reader // nil until the first Read, and after Close
	reading bool
	closed  bool
}

var (
	errReadAfterClose = errors.New("read on a closed answer body")
	errReadAtOnce     = errors.New("two reads at once on an answer body")
)

// gzipDecoders holds decoders between answers: each holds a window of 32 KiB and tables.
var gzipDecoders = sync.Pool{New: func() any { return new(gzip.Reader) }}

func (g *gunzipBody) Read(p []byte) (int, error) {
	g.mu.Lock()
	switch {
	case g.closed:
		g.mu.Unlock()
		return 0, errReadAfterClose
	case g.reading:
		g.mu.Unlock()
		return 0, errReadAtOnce
	}
	decoder, first := g.decoder, g.decoder == nil
	if first {
		decoder = gzipDecoders.Get().(*gzip.Reader)
		g.decoder = decoder
	}
	g.reading = true
	g.mu.Unlock()

	// Reset reads the gzip header; an error is kept by the decoder, and every Read returns it.
	var n int
	var err error
	if first {
		err = decoder.Reset(g.body)
	}
	if err == nil {
		n, err = decoder.Read(p)
	}

	g.mu.Lock()
	g.reading = false
	if g.closed {
		g.decoder = nil
		recycleDecoder(decoder)
	}
	g.mu.Unlock()
	return n, err
}

// Close closes the answer's body, and gives its decoder back unless a Read is using it.
func (g *gunzipBody) Close() error {
	g.mu.Lock()
	g.closed = true
	if g.decoder != nil && !g.reading {
		recycleDecoder(g.decoder)
		g.decoder = nil
	}
	g.mu.Unlock()
	return g.body.Close()
}

// recycleDecoder puts a decoder back in the pool. The decoder lets go of the answer's body, but
// its decompressor keeps the answer's last window (up to 32 KiB) and its reference to the body
// until the decoder's next Reset, or until the pool is emptied by a collection; nothing of it
// reaches the next answer, whose Reset starts a new stream.
func recycleDecoder(decoder *gzip.Reader) {
	_ = decoder.Reset(noBytes{}) // io.EOF, always: the reset only drops the old source
	gzipDecoders.Put(decoder)
}

// noBytes is an empty source with ReadByte, so that a decoder reset onto it does not allocate
// a buffered reader around it.
type noBytes struct{}

func (noBytes) Read([]byte) (int, error) { return 0, io.EOF }
func (noBytes) ReadByte() (byte, error)  { return 0, io.EOF }
