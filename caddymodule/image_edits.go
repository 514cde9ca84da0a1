package caddymodule

import (
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/imageedit"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

func init() {
	caddy.RegisterModule(ImageEditsHandler{})
}

// ImageEditsHandler serves POST /v1/images/edits and GET /v1/images/tasks/{id}. It must follow
// mediagw_auth. Edits are validated (spec §2.6; errors in the OpenAI shape with param naming the
// field), checked against the key's models, and sent to the provider serving the model, whose
// answer passes through; a provider with `protocol ark` written out gets the edit as a Seedream
// image generation (Ark's images/generations), whose answer is mapped to the edit's. When the
// provider answers with a task id (id or task_id), the calling account is recorded as its
// owner; GET /v1/images/tasks/{id} then reads the provider's images/tasks/{id} for the owner and
// answers 404 task_not_found to everyone else. It needs no path matcher: it answers
// /v1/images/edits and every path below /v1/images/tasks/, spelled exactly so (404 not_found for
// one that is no task's), and passes every other request to the next handler
// (/v1/images/generations, /v1/images/edits/, /V1/IMAGES/EDITS).
type ImageEditsHandler struct {
	// UpstreamTimeout bounds each provider call; past it the client gets 504. Default: 60s. At
	// most MaxImageEditTimeout: an edit's hold is released by the reconciler at its deadline
	// (storage.DefaultHoldDeadline), which a live call must never outlast.
	UpstreamTimeout caddy.Duration `json:"upstream_timeout,omitempty"`
	// MaxAnswer bounds, in bytes, how much of a provider's answer to an edit or an image task
	// query is read. Answers with images in them (b64_json) are large: ten big ones take tens
	// of MiB, held in memory while each is checked and passed on. An edit answered with success
	// past it gets 502 and is charged its estimate (the provider made the images). Default:
	// 64 MiB; at most 1 GiB, and at most the mediagw options answer_memory, which bounds the
	// bytes of all the answers held at once (an edit reserves 64 KiB of it before it is charged
	// and sent; see imageedit.EditAnswerReserve), and answer_memory_per_account, one account's
	// share of it.
	MaxAnswer int64 `json:"max_answer,omitempty"`

	edits *imageedit.Handler
}

// CaddyModule returns the Caddy module information.
func (ImageEditsHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_image_edits",
		New: func() caddy.Module { return new(ImageEditsHandler) },
	}
}

// Provision finds the mediagw app.
func (h *ImageEditsHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.edits = &imageedit.Handler{
		Catalog:     app.Catalog(),
		Store:       app.Store(),
		Client:      app.upstreamClient(time.Duration(h.UpstreamTimeout)),
		MaxAnswer:   h.MaxAnswer,
		Retention:   app.taskRetention(),
		Accounting:  app.Accountant(),
		Idempotency: app.Idempotency(),
		Budget:      app.AnswerBudget(),
		Logger:      ctx.Logger(),
	}
	// An answer of max_answer must fit the gateway's answer_memory, or it would never be read.
	// Its copies (a credential taken out, the client's model id shown) take its place in the
	// budget, adding only what they are longer by: one answer takes max_answer.
	maxAnswer := h.edits.MaxAnswerBytes()
	if limit := app.answerMemory(); maxAnswer > limit {
		return fmt.Errorf("mediagw_image_edits: max_answer (%d bytes) is above the mediagw option answer_memory (%d bytes), which bounds all the answers held at once and must hold one of max_answer: write answer_memory %d (or more) in the mediagw global options, or lower max_answer", maxAnswer, limit, maxAnswer)
	}
	// One answer must fit its account's share too (no account holds past its share), so that an
	// account's answer alone is always read.
	if share := app.answerShare(); maxAnswer > share {
		return fmt.Errorf("mediagw_image_edits: max_answer (%d bytes) is above the mediagw option answer_memory_per_account (%d bytes; by default a quarter of answer_memory), the most one account's answers may hold, which must hold one answer of max_answer: write answer_memory_per_account %d (or more, at most answer_memory) in the mediagw global options, or lower max_answer", maxAnswer, share, maxAnswer)
	}
	return nil
}

// MaxImageEditTimeout is the longest upstream_timeout of mediagw_image_edits: one minute short of
// the hold deadline, so an edit ends (settles or releases its hold) before the reconciler would
// release the hold of a request still in flight.
const MaxImageEditTimeout = storage.DefaultHoldDeadline - time.Minute

// Validate refuses an upstream_timeout the edit's hold would not outlast, and a max_answer
// below 0 or above 1 GiB.
func (h *ImageEditsHandler) Validate() error {
	if h.MaxAnswer < 0 || h.MaxAnswer > upstream.MaxAnswerLimit {
		return fmt.Errorf("mediagw_image_edits: max_answer %d is outside 0 (the default, 64 MiB) to %d bytes (1 GiB): an answer is held in memory while it is read", h.MaxAnswer, int64(upstream.MaxAnswerLimit))
	}
	if t := time.Duration(h.UpstreamTimeout); t > MaxImageEditTimeout {
		return fmt.Errorf("mediagw_image_edits: upstream_timeout %v is above %v: an edit's hold is released %v after it is taken, so a longer call could lose its hold while still running", t, MaxImageEditTimeout, storage.DefaultHoldDeadline)
	}
	return nil
}

// Cleanup closes idle upstream connections.
func (h *ImageEditsHandler) Cleanup() error {
	if h.edits != nil {
		h.edits.Client.CloseIdleConnections()
	}
	return nil
}

// ServeHTTP serves the image edit paths and passes any other path to the next handler, so that
// with no matcher, or a broad one such as /v1/images/*, /v1/images/generations is left to
// mediagw_route.
func (h *ImageEditsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !imageedit.Serves(r.URL.Path) {
		return next.ServeHTTP(w, r)
	}
	h.edits.ServeHTTP(w, r)
	return nil
}

// UnmarshalCaddyfile sets up the handler. Syntax:
//
//	mediagw_image_edits [<matcher>] {
//		upstream_timeout <duration>
//		max_answer       <size>
//	}
func (h *ImageEditsHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	return parseBlock(d, map[string]func() error{
		"upstream_timeout": func() error { return durationArg(d, &h.UpstreamTimeout) },
		"max_answer":       func() error { return sizeArg(d, &h.MaxAnswer) },
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*ImageEditsHandler)(nil)
	_ caddy.CleanerUpper          = (*ImageEditsHandler)(nil)
	_ caddy.Validator             = (*ImageEditsHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*ImageEditsHandler)(nil)
	_ caddyfile.Unmarshaler       = (*ImageEditsHandler)(nil)
)
