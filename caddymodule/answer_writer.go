package caddymodule

import (
	"github.com/mediagw/mediagw/internal/hdr"
	"mime"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/usage"
)

// answerWriter passes a proxied answer through, without the provider's Set-Cookie, while
// remembering its status and reading the token usage it reports, as it streams by (see
// usage.Sniffer). Flushing and the rest pass through the wrapper.
type answerWriter struct {
	caddyhttp.ResponseWriterWrapper
	status int32
	// writeFailed is set when writing the answer to the client failed: the client left.
	writeFailed bool
	sniff       bool
	sniffer     usage.Sniffer
	// images, when not nil, reads what the answer reports of images, for a request whose hold
	// pays for them (see countImages and readToolImages).
	images *imageReader
}

// imageReader reads what an answer reports of images: kept apart from answerWriter, which every
// pass-through request's observedWriter holds, as only the requests that pay for images need it.
type imageReader struct {
	// counted is set for an image request, whose hold settles from the items of a JSON answer's
	// data, or from the image events of a streamed answer (see imageCounts).
	counted bool
	items   usage.DataItems
	events  usage.ImageEvents
	// tool, when not nil, reads the images a Responses answer's image_generation tool made (set
	// for a request whose hold pays for them).
	tool *usage.ResponseImages
}

// countImages makes w count the images of the answer (see imageCounts).
func (w *answerWriter) countImages() { w.imageReader().counted = true }

// readToolImages makes w read the images a Responses answer's image_generation tool made (see
// madeImages).
func (w *answerWriter) readToolImages() { w.imageReader().tool = new(usage.ResponseImages) }

func (w *answerWriter) imageReader() *imageReader {
	if w.images == nil {
		w.images = new(imageReader)
	}
	return w.images
}

// imageCounts are the answer's counts of its images; nil when they are not counted.
func (w *answerWriter) imageCounts() *imageReader {
	if w.images == nil || !w.images.counted {
		return nil
	}
	return w.images
}

// toolImages reads the images a Responses answer's tool made; nil when they are not read.
func (w *answerWriter) toolImages() *usage.ResponseImages {
	if w.images == nil {
		return nil
	}
	return w.images.tool
}

func newAnswerWriter(w http.ResponseWriter) *answerWriter {
	return &answerWriter{ResponseWriterWrapper: caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
}

// answerWriterFor is newAnswerWriter(w) for mediagw_route: when w is the request's observed
// writer (mediagw_route right after mediagw_auth, as configured), the answer writer it keeps,
// taken once; otherwise a new one.
func answerWriterFor(w http.ResponseWriter) *answerWriter {
	ow, ok := w.(*observedWriter)
	if !ok || ow.answerTaken {
		return newAnswerWriter(w)
	}
	ow.answerTaken = true
	aw := &ow.answer
	aw.ResponseWriter = w
	return aw
}

func (w *answerWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = int32(status)
		// A provider's cookies (load balancer affinity, bot checks) belong to the operator's
		// session with it, not to a tenant, and cookies ignore ports: one set on the gateway's
		// host would reach the console too.
		h := w.Header() // once: each call goes down the chain of wrapped writers
		hdr.Del(h, "Set-Cookie")
		mt, err := hdr.Get(h, "Content-Type"), error(nil)
		if mt != "application/json" && mt != "text/event-stream" { // the common ones need no parsing
			mt, _, err = mime.ParseMediaType(mt)
		}
		switch {
		case err != nil || status >= 300 || hdr.Get(h, "Content-Encoding") != "":
		case mt == "text/event-stream":
			w.sniff, w.sniffer.SSE = true, true
			if tool := w.toolImages(); tool != nil {
				tool.SSE = true
			}
		case mt == "application/json":
			w.sniff = true
		}
	}
	w.ResponseWriterWrapper.WriteHeader(status)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.sniff {
		w.sniffer.Write(b)
		if w.images != nil {
			w.readImages(b)
		}
	}
	n, err := w.ResponseWriterWrapper.Write(b)
	if err != nil {
		w.writeFailed = true
	}
	return n, err
}

// readImages reads b, the answer's next bytes, for what it reports of images.
func (w *answerWriter) readImages(b []byte) {
	if tool := w.images.tool; tool != nil {
		tool.Write(b)
	}
	switch {
	case !w.images.counted:
	case w.sniffer.SSE:
		w.images.events.Write(b)
	default:
		w.images.items.Write(b)
	}
}

// madeImages is what the answer reports of the images a Responses tool made (see
// usage.ResponseImages); nothing reported when they were not read.
func (w *answerWriter) madeImages() billing.MadeImages {
	tool := w.toolImages()
	if tool == nil || !w.sniff {
		return billing.MadeImages{}
	}
	return tool.Made()
}

// streamed reports whether the answer is a stream (text/event-stream): one whose status was
// written, read as such (see WriteHeader), or one whose success status a writer in front of this
// one still holds (passthrough.CreatedWriter holds it until the stream's first event), known by
// the Content-Type the proxy has set. Call it when the answer is complete.
func (w *answerWriter) streamed() bool {
	if w.status != 0 {
		return w.sniffer.SSE
	}
	mt, _, err := mime.ParseMediaType(hdr.Get(w.Header(), "Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// Interface guards
var _ http.ResponseWriter = (*answerWriter)(nil)
