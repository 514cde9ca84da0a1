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
	// images, when not nil, counts the items of a JSON answer's data, or the image events of a
	// streamed answer (set for an image request, whose hold settles from them; see countImages).
	images *imageCounts
	// toolImages, when not nil, reads the images a Responses answer's image_generation tool
	// made (set for a request whose hold pays for them).
	toolImages *usage.ResponseImages
	// placeholders are the routed request's, kept here to save an allocation.
	placeholders routePlaceholders
}

// imageCounts are what an image answer reports of its images: kept apart from answerWriter,
// which every pass-through request's observedWriter holds, as only image requests need them.
type imageCounts struct {
	items  usage.DataItems
	events usage.ImageEvents
}

// countImages makes w count the images of the answer (see images).
func (w *answerWriter) countImages() { w.images = new(imageCounts) }

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
			if w.toolImages != nil {
				w.toolImages.SSE = true
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
		if w.toolImages != nil {
			w.toolImages.Write(b)
		}
		switch {
		case w.images == nil:
		case w.sniffer.SSE:
			w.images.events.Write(b)
		default:
			w.images.items.Write(b)
		}
	}
	n, err := w.ResponseWriterWrapper.Write(b)
	if err != nil {
		w.writeFailed = true
	}
	return n, err
}

// madeImages is what the answer reports of the images a Responses tool made (see
// usage.ResponseImages); nothing reported when they were not read.
func (w *answerWriter) madeImages() billing.MadeImages {
	if w.toolImages == nil || !w.sniff {
		return billing.MadeImages{}
	}
	return w.toolImages.Made()
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
