package passthrough

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
)

var (
	errModelMember    = apierror.New(http.StatusBadRequest, "invalid_request_body", "model must be the body's top-level \"model\" string member").WithParam("model")
	errAliasMultipart = apierror.New(http.StatusBadRequest, "invalid_request_body", "this model is an alias, which multipart requests cannot use; send the provider's model id").WithParam("model")
)

// dispatch picks the order in which the provider's upstreams are tried, maps the model for the
// upstream, makes the body replayable for a retry, and points r at the first upstream (its
// credentials and base path), so that r is right even for a reverse_proxy without the mediagw
// transport. Every upstream cooling down is a 503 with Retry-After.
func (rt *Router) dispatch(r *http.Request, route *Route) error {
	p := route.Provider
	order, wait := p.Order()
	if len(order) == 0 {
		return providers.NoUpstream(p, wait)
	}
	d := providers.NewDispatch(p, order)
	d.Model, d.UpstreamModel = route.Model, p.UpstreamModel(route.Model)
	if d.UpstreamModel != d.Model {
		if err := mapModel(r, d); err != nil {
			return err
		}
	}
	switch {
	case r.GetBody != nil:
		d.Body = replayFunc(r.GetBody)
	case r.Body == nil || r.Body == http.NoBody:
		d.Body = replayFunc(func() (io.ReadCloser, error) { return http.NoBody, nil })
	case len(p.Upstreams) > 1:
		rec := &recording{src: r.Body, rec: &spool{memLimit: rt.spoolMemory(), dir: rt.TempDir}}
		r.Body, d.Body = rec, rec
		done := route.Done
		route.Done = func() { rec.close(); done() }
	}
	first := d.First()
	rewrite(r, first)
	d.Rest = strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(first.BaseURL.Path, "/"))
	route.Dispatch = d
	return nil
}

// mapModel puts the upstream's model id where the client's was: the path of a generate-content
// request, or the JSON body's top-level "model" (only that value's bytes change).
func mapModel(r *http.Request, d *providers.Dispatch) error {
	if m := pathModel.FindStringSubmatchIndex(r.URL.Path); m != nil {
		r.URL.Path = r.URL.Path[:m[2]] + d.UpstreamModel + r.URL.Path[m[3]:]
		r.URL.RawPath = ""
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" || r.GetBody == nil {
		return errAliasMultipart
	}
	orig, err := r.GetBody()
	if err != nil {
		return err
	}
	body, err := io.ReadAll(orig)
	if err != nil {
		return err
	}
	mapped, ok := providers.ReplaceModel(body, d.UpstreamModel)
	if !ok {
		return errModelMember
	}
	r.Body = io.NopCloser(bytes.NewReader(mapped))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(mapped)), nil }
	r.ContentLength = int64(len(mapped))
	r.Header.Set("Content-Length", strconv.Itoa(len(mapped)))
	return nil
}

func (rt *Router) spoolMemory() int64 {
	if rt.SpoolMemory > 0 {
		return rt.SpoolMemory
	}
	return DefaultSpoolMemory
}

// replayFunc replays a body held whole.
type replayFunc func() (io.ReadCloser, error)

func (f replayFunc) Replay() (io.ReadCloser, error) { return f() }

// recording is a streamed request body that keeps what was read of it (in memory up to a bound,
// then in a temporary file), so that a retry on another upstream sends the same bytes: first
// what an earlier attempt read, then the rest as it arrives. Only the latest attempt may read;
// an earlier attempt that is still sending is cut off.
type recording struct {
	mu      sync.Mutex
	src     io.ReadCloser
	rec     *spool
	attempt int
	err     error
}

// Read reads the body as the first attempt does.
func (b *recording) Read(p []byte) (int, error) { return b.readLive(p, b.attempt) }

// Close closes the client's body.
func (b *recording) Close() error { return b.src.Close() }

func (b *recording) readLive(p []byte, attempt int) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if attempt != b.attempt {
		return 0, io.ErrClosedPipe
	}
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.src.Read(p)
	if n > 0 {
		if _, werr := b.rec.Write(p[:n]); werr != nil {
			b.err = werr
			return 0, werr
		}
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// Replay starts an attempt: what earlier attempts read, then the rest of the body.
func (b *recording) Replay() (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempt++
	read, err := b.rec.reader()
	if err != nil {
		return nil, err
	}
	attempt := b.attempt
	live := readerFunc(func(p []byte) (int, error) { return b.readLive(p, attempt) })
	return io.NopCloser(io.MultiReader(read, live)), nil
}

func (b *recording) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempt = -1
	if err := b.rec.Close(); err != nil {
		b.err = err
	}
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
