package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/handlers/passthrough"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/internal/tracing"
	"github.com/mediagw/mediagw/storage"
)

func init() {
	caddy.RegisterModule(RouteHandler{})
}

// RouteHandler prepares pass-through requests (chat, responses, messages, generateContent,
// images, videos, audio, embeddings, rerank) for the reverse_proxy blocks that follow it. It must
// follow mediagw_auth.
//
// It forwards only the endpoints of the gateway's interface: POST /v1/chat/completions,
// /v1/responses, /v1/messages, the generate-content protocol's /{version}/models/{model}:method
// under both /v1beta and /v1 (generateContent, streamGenerateContent, countTokens, embedContent,
// batchEmbedContents), /v1/images/generations, /v1/video/generations, /v1/videos,
// /v1/audio/transcriptions, /v1/audio/translations, /v1/audio/speech, /v1/embeddings and
// /v1/rerank, plus retrieval, content, remix, cancel and delete calls on the videos, responses
// and image tasks that the caller's account created through it. Every other method and path is
// 404 (a forwarded path with another method too), so a broad matcher cannot expose a provider's
// other endpoints (task lists, files, …). Add more with the endpoint subdirective.
//
// It finds the model in the JSON body, in the multipart field "model", or in a
// /v1beta/models/{model}:{action} or /v1/models/{model}:{action} path; a model that such a body
// names again (embedContent's model, countTokens' generateContentRequest.model, each request of
// batchEmbedContents) must be the path's, bare or as models/{model}. A JSON body whose keys repeat, or differ from a checked
// field (model, previous_response_id) only by case, is refused with 400, as is a multipart body
// with more than one model part or a part named like model but not exactly so: what reaches the
// upstream is what was checked. A multipart body is read whole through a spool (memory up to
// spool_memory, then an unlinked temporary file, at most max_spool, then 413) before it is sent.
// A model outside the key's patterns is refused with 403, one that no provider serves with 404
// model_not_found. It then sets the provider's credentials in the provider's auth style,
// replaces the client's version prefix (/v1, /v1beta) with the provider's base path, and
// publishes {mediagw.model}, {mediagw.provider}, {mediagw.upstream} (the chosen upstream's
// scheme://host) and {mediagw.upstream_name}.
//
// A provider with several upstreams picks one per request (see the provider's upstream
// blocks); when every upstream cools down the answer is 503 with Retry-After. One reverse_proxy
// serves every provider, with failover, through the mediagw upstream source and transport:
//
//	reverse_proxy {
//		dynamic mediagw
//		transport mediagw
//		lb_policy first
//		lb_retries 2
//	}
//
// The ids that POST /v1/videos, /v1/video/generations, /v1/responses and asynchronous
// /v1/images/generations return are recorded as the caller's account's before the client sees
// them; other accounts get 404, as for an unknown id, and a previous_response_id must be the
// caller's own. So must every response item named by id in an input: the items of every
// Responses answer are recorded as the caller's account's. A create of a video, video generation
// or image generation that sends one Idempotency-Key runs once per key: its retry gets the first
// answer, before any hold or active-task slot is taken (see docs/api.md#idempotency). SSE answers are streamed by reverse_proxy;
// a streamed chat completion is sent with stream_options.include_usage true, and a stream of
// text its client leaves is read on for at most 10 s and 8 MiB for its final usage (see
// streamDrain). The model's cost is charged to the
// key's quota (402 past it; a batch is charged each request's model's cost, and holds the sum of
// each request's estimate at its own model's price, settled at the amount held) and refunded when the answer is an error status; calls on existing
// objects cost nothing, and so do counts of input tokens (:countTokens, and an added path ending
// in /count_tokens or /input_tokens); an embedding or a rerank (/v1/embeddings, :embedContent,
// :batchEmbedContents, /v1/rerank, an added path ending in /embeddings or /rerank) is held and
// charged its input only.
// A Responses request's image_generation tool also holds the images it may
// make at its image model's price (the provider's tool_image_model when the tool names none), and
// is charged each image its answer reports made (see docs/billing.md).
type RouteHandler struct {
	// MaxJSONBody bounds a JSON request body, which is read whole to find the model. Past it the
	// client gets 413. Default: 32 MiB.
	MaxJSONBody int64 `json:"max_json_body,omitempty"`
	// SpoolMemory is how much of a multipart body is held in memory while it is checked; the
	// rest goes to a temporary file. Default: 1 MiB.
	SpoolMemory int64 `json:"spool_memory,omitempty"`
	// MaxSpool bounds a whole multipart body. Past it the client gets 413. Default: 512 MiB.
	MaxSpool int64 `json:"max_spool,omitempty"`
	// Endpoints are more endpoints to forward, besides the built-in ones, each as a method and
	// a path such as "POST /v1/moderations"; a path segment may be {model} or {model}:action.
	// Requests to them must name a model the key allows, like every pass-through request.
	Endpoints []string `json:"endpoints,omitempty"`
	// CreateGrace is how long a create's call to its provider goes on after its client left
	// (see keptCreate): the object is then recorded and the SDK's retry is its replay. Past it
	// the call is cut, and the create is charged its estimate. Default: 5 minutes.
	CreateGrace caddy.Duration `json:"create_grace,omitempty"`

	router     *passthrough.Router
	guard      *idempotency.Guard
	accountant *accounting.Accountant
	logger     *zap.Logger
	log        credentialSafeLog
}

// CaddyModule returns the Caddy module information.
func (RouteHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_route",
		New: func() caddy.Module { return new(RouteHandler) },
	}
}

// Provision finds the mediagw app.
func (h *RouteHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.accountant, h.logger = app.Accountant(), ctx.Logger()
	h.log = newCredentialSafeLog(ctx)
	h.guard = app.Idempotency()
	h.router = &passthrough.Router{
		Catalog: app.Catalog(), Owners: app.Store(), Retention: app.taskRetention(),
		MaxJSONBytes: h.MaxJSONBody, SpoolMemory: h.SpoolMemory, MaxSpool: h.MaxSpool, Logger: h.logger,
	}
	for _, e := range h.Endpoints {
		method, path, _ := strings.Cut(e, " ")
		ep, err := passthrough.ParseEndpoint(method, path)
		if err != nil {
			return err
		}
		h.router.Extra = append(h.router.Extra, ep)
	}
	return nil
}

// ServeHTTP routes r. A provider may answer a read (a video's content above all) with a redirect
// to a presigned URL, which Caddy's access log would print among the answer's headers: the entry
// of every request but a POST is written by the handler, the Location without its signature
// (credentialSafeLog.serveRedirectable). A POST (a create, a chat: no protocol the gateway
// forwards answers one with a redirect) is left to Caddy's entry, which costs it nothing.
func (h *RouteHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if r.Method != http.MethodPost {
		return h.log.serveRedirectable(w, r, func(w http.ResponseWriter, r *http.Request) error { return h.route(w, r, next) })
	}
	return h.route(w, r, next)
}

// route serves r (see ServeHTTP).
func (h *RouteHandler) route(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// The shape of the endpoint the client called: Route rewrites r.URL.Path to the upstream's
	// (a provider's base path, such as /gemini/v1beta, moves it out of the protocol's prefix).
	shape := apierror.ShapeFor(r)
	calledPath := r.URL.Path
	id, ok := auth.FromContext(r.Context())
	if !ok {
		apierror.Write(w, shape, auth.ErrMissingKey)
		return nil
	}
	route, err := h.router.Route(w, r, id)
	if err != nil {
		apierror.Respond(w, shape, h.logger, err)
		return nil
	}
	defer route.Done()
	upstreamName := route.Dispatch.First().Name // the first upstream tried names the series
	usage.From(r.Context()).Routed(route.Model, route.Provider.Name, upstreamName)
	var aborted bool
	if route.RequestHash != "" && h.guard != nil {
		// A create of an asynchronous object with its Idempotency-Key: a retry of one that ran
		// is answered here, before any hold or slot is taken (see passthrough.Route.RequestHash).
		// Keys are kept per account and endpoint: one key sent to two endpoints makes two requests.
		h.guard.Run(w, r, id.Account+"/pass-creates "+route.CreateEndpoint, route.IdempotencyKey, route.RequestHash, shape, func(w http.ResponseWriter, r *http.Request) {
			aborted, err = h.serveRouted(w, r, next, id, &route, shape, calledPath)
		})
	} else {
		aborted, err = h.serveRouted(w, r, next, id, &route, shape, calledPath)
	}
	if aborted {
		// reverse_proxy ends an answer the client left in the middle of (a cut stream) by
		// panicking with http.ErrAbortHandler; the request was still ended (its hold settled, its
		// object recorded, its key spent or freed, never its cut answer kept) before that panic
		// goes on to the server.
		panic(http.ErrAbortHandler)
	}
	return err
}

// serveRouted holds, takes the slot of, proxies and settles a routed request. aborted reports
// that reverse_proxy cut the answer off midway (see proxyUntilAbort): the caller then panics
// with http.ErrAbortHandler, as reverse_proxy did.
func (h *RouteHandler) serveRouted(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, id auth.Identity, route *passthrough.Route, shape apierror.Shape, calledPath string) (aborted bool, err error) {
	entry := usage.From(r.Context())
	// A create is proxied on when its client leaves meanwhile (see keptCreate), and its hold
	// renewed as long as it is: the hold follows the kept context, not the client's.
	holdCtx := r.Context()
	var kept *keptCreate
	if route.Creates != "" {
		kept = keepCreating(r.Context(), h.createGrace())
		defer kept.end()
		holdCtx = kept.ctx
	}
	// A stream of text is read on after its client left, for its final usage (see streamDrain).
	var stream *keptCreate
	if drains(route) {
		if stream = kept; stream == nil {
			stream = keepStreaming(r.Context())
			defer stream.end()
			holdCtx = stream.ctx
		} else {
			stream.drainStreams(streamDrainTime)
		}
	}
	var hold accounting.Hold
	if route.Billable {
		if len(route.Calls) > 0 {
			// A batch: one hold of each call's estimate at its own model's price.
			hold, err = h.accountant.HoldCalls(holdCtx, id, route.Model, "", route.Calls, storage.DefaultHoldDeadline)
		} else {
			// A slot-taking create's hold names it (accounting.SlotRef): should this process die
			// before the object's record keeps the slot, the reconciler's release of the hold
			// gives the slot back.
			ref := ""
			if route.TakesSlot() {
				ref = accounting.SlotRef
			}
			if len(route.ToolImages) > 0 {
				// A Responses request whose image_generation tool runs an image model of its
				// own: its images are held too, at that model's price.
				hold, err = h.accountant.HoldWithToolImages(holdCtx, id, route.Model, ref, route.Sizing, route.ToolImages, storage.DefaultHoldDeadline)
			} else {
				hold, err = h.accountant.HoldFor(holdCtx, id, route.Model, ref, func(p *billing.Price) billing.Estimate {
					return p.EstimateRequest(route.Sizing)
				}, storage.DefaultHoldDeadline)
			}
		}
		if err != nil {
			apierror.Respond(w, shape, h.logger, err)
			return false, nil
		}
		entry.Accepted()
	} else if route.CountsTokens {
		// A count holds nothing, but an overdrawn account's next requests get 402 all the same.
		if err = h.accountant.Spendable(r.Context(), id); err != nil {
			apierror.Respond(w, shape, h.logger, err)
			return false, nil
		}
	}
	if route.Slot, err = h.takeSlot(r.Context(), &id, route); err != nil {
		hold.Release("refused: too many active tasks")
		entry.Refused()
		apierror.Respond(w, shape, h.logger, err)
		return false, nil
	}
	repl := requestReplacer(w, r)
	sw := answerWriterFor(w)
	if stream != nil {
		sw.ResponseWriter = newStreamDrain(sw.ResponseWriter, r.Context(), stream)
	}
	if route.Sizing.Images && hold.ID != "" {
		sw.countImages()
	}
	if hold.HoldsToolImages() {
		sw.readToolImages()
	}
	publishRoute(repl, route.Dispatch)
	var out http.ResponseWriter = sw
	var created *passthrough.CreatedWriter
	if route.Records() {
		route.Hold = hold // a video's or image task's record carries it (see passthrough.CreatedWriter.HeldBy)
		route.Endpoint = entry.EndpointOr(calledPath)
		created = h.router.Created(sw, r, id, *route)
		created.Shape = shape
		out = created
	}
	watch := h.router.WatchObject(out, *route)
	if watch != nil {
		out = watch
	}
	traced := tracedRequest(w, r)
	// pr is r with the dispatch in its context (a create's: the kept context, made from r's).
	ctx := r.Context()
	if kept != nil {
		created.Streamed = kept.followClient
		ctx = kept.ctx
	} else if stream != nil {
		ctx = stream.ctx
	}
	if !providers.SetDispatch(r.Context(), route.Dispatch) {
		ctx = providers.WithDispatch(ctx, route.Dispatch)
	}
	pr := r
	if ctx != r.Context() {
		pr = r.WithContext(ctx)
	}
	if route.RequestHash != "" {
		idempotency.MarkForwarded(pr.Context()) // its answer is kept for a retry
	}
	aborted, err = h.proxyUntilAbort(out, pr, next, route.Provider.Name, traced)
	// A client that went away after the request was forwarded is not refunded (one that left
	// before any attempt was written to an upstream's connection is: see NeverSent), and an object
	// the upstream created meanwhile is still recorded as its account's: the upstream may well
	// have done (and billed) the work. An answer cut off midway (aborted) is settled the same
	// way, whoever cut it: the client (its request's context ended, or writing to it failed), or
	// the upstream (the connection dropped or the body ended early while the client was there).
	clientLeft := r.Context().Err() != nil || sw.status == 499 || sw.writeFailed
	if kept != nil {
		// The gateway read a create's whole answer unless it cut the call itself (its grace ran
		// out, or a stream's client left) or a stream could not be written to its client: what a
		// held JSON answer's client got changes nothing of what was made.
		clientLeft = kept.ctx.Err() != nil || sw.status == 499 || sw.writeFailed && sw.streamed()
	}
	upstreamCut := aborted && !clientLeft
	clientGone := aborted || clientLeft
	if created != nil && (err == nil || clientGone) {
		created.Finish()
	}
	if created == nil || !created.KeptSlot() {
		route.Slot.Release() // no object was recorded to hold it
	}
	carried := created != nil && created.HeldBy() != ""
	if aborted && (created == nil || !created.KeptSlot() && !carried) {
		// A cut answer is never replayed, unless the gateway read it whole enough to record the
		// object it names (a held JSON answer cut a byte short): what the client is answered
		// (created.Finish) names that object, and a retry gets it again.
		idempotency.MarkCut(r.Context())
	}
	if carried {
		// The video's (or image task's) record carries the hold: its end settles or releases it (see
		// accounting.Accountant.ObjectFinished), not this request's.
		hold.BindTo(r.Context(), created.HeldBy())
		h.createdEnded(r.Context(), created)
	}
	if watch != nil && err == nil {
		h.objectFinished(r.Context(), watch)
	}
	if created != nil && (created.KeptSlot() || created.HeldBy() != "") {
		h.remixedSourceCompleted(r.Context(), *route)
	}
	// Output counted from a stream's deltas is bounded by the hold's estimate when the request
	// named its maximum (max_tokens …, times n), which the model keeps to; the estimate of a
	// request that named none (the price's max_output, else 4096) is no bound of its length.
	countedBound := int64(0)
	if route.Sizing.MaxOutput > 0 {
		countedBound = hold.Estimate.Usage.OutputTokens
	}
	tokens := sw.sniffer.Seen(clientGone).AtMostOutput(countedBound)
	if route.UsageUnasked {
		// A stream of a provider that is not asked for its usage (omit_stream_options) and
		// reports none is charged at least the output held, not only the deltas it showed (or
		// that were read before the drain's bounds cut it): see usage.Tokens.AtLeastOutput.
		tokens = tokens.AtLeastOutput(hold.Estimate.Usage.OutputTokens)
	}
	if route.Sizing.InputOnly {
		tokens = tokens.AsInput()
	}
	errorOnly := !tokens.Known() && sw.sniffer.ErrorOnly()
	nothingServed := !tokens.Known() && sw.sniffer.NothingServed()
	counts := sw.imageCounts()
	streamedImages := counts != nil && sw.streamed() // read before Release empties the sniffer
	entry.AddTokens(tokens)
	sw.sniffer.Release()
	if latency, ok := repl.Get("http.reverse_proxy.upstream.latency"); ok {
		if d, ok := latency.(time.Duration); ok {
			entry.UpstreamLatency(d)
			// The latency is the answering upstream's, which after a failover is not the first.
			metrics.UpstreamDuration(route.Provider.Name, route.Dispatch.Answered().Name, entry.EndpointOr(r.URL.Path), d)
		}
	}
	var images int64
	var counted bool
	var size, quality string // what the answer reports; none when its images are not counted
	if counts != nil {
		images, counted = counts.items.Count()
		size, quality = counts.items.Reported()
	}
	size, quality = billing.AnswerImage(size, quality)
	// A streamed image answer (stream: true) settles from its completed events as a JSON one
	// from its data (see usage.ImageEvents); one that streamed any image, partial or completed,
	// made something, and is charged even when the upstream broke it off afterwards.
	streamedSome := false
	if streamedImages {
		images, counted = counts.events.Completed(), true
		size, quality = billing.AnswerImage(counts.events.Reported())
		streamedSome = images > 0 || counts.events.Partials() > 0
	}
	// madeNothing releases the hold of a request whose upstream made nothing: an idempotent
	// create's key is then freed, whatever its answer, and its retry runs again.
	madeNothing := func(note string) {
		hold.Release(note)
		idempotency.MarkUnmade(r.Context())
	}
	// charged: the hold was settled here (not released, nor carried by the object's record).
	charged := false
	// Otherwise an error or a refusal means the request was not served.
	switch {
	case carried:
		// Charged when the video or image task ends: nothing is charged with the create.
	case route.Dispatch.NeverSent():
		// No attempt's request reached an upstream's connection (the client left while the
		// gateway connected, or before it began): no provider got it, whoever left.
		madeNothing("the request never reached the provider")
	case created != nil && created.Replayed():
		// The provider answered a retried create (the same Idempotency-Key) with the object its
		// first attempt made and recorded: that attempt pays for it, once.
		hold.Release(passthrough.ReplayReleaseNote)
	case created != nil && created.Unrecorded():
		// The provider accepted the create, but the object's owner could not be recorded, so
		// the client got 500 and not its id. Whatever the provider started may run: the hold
		// is charged as estimated, as the task API charges a task it cannot follow, and an
		// idempotent create's key is spent (made, and below cut: its 500 is not replayed), so
		// that a retry does not make another.
		entry.Settled(int64(hold.Settle(billing.Usage{})))
		idempotency.MarkMade(r.Context())
		charged = true
	case !clientGone && (sw.status >= 400 || (err != nil && !streamedSome)):
		madeNothing("refused by the upstream")
	case streamedImages && !streamedSome:
		// Nothing was made that the client could have, whoever ended the stream.
		madeNothing("the upstream streamed no image")
	case counts != nil && counted && images == 0 && !streamedImages:
		madeNothing("the upstream made no image")
	case !clientGone && errorOnly:
		// A success status whose whole body is an error object (see usage.Sniffer.ErrorOnly):
		// the client got only the error, as with an error status.
		madeNothing("the upstream answered only an error")
	case sw.status >= 300 && sw.status != 499 && !streamedSome:
		// The upstream answered an error or a redirect: it made nothing, also when the client
		// left while the answer came. (499 is Caddy's note of a client that left first.)
		madeNothing("refused by the upstream")
	case clientGone && route.Background && sw.status < 400:
		// A background response goes on at the provider when its stream is cut: its output
		// and images come to the client through retrieves, which charge nothing. It is
		// charged its estimate (the tokens and images held), as a background response
		// answered at once is.
		entry.Settled(int64(hold.Settle(billing.Usage{})))
		charged = true
	case upstreamCut && nothingServed:
		// The upstream broke its stream off before any output (after at most the events that
		// open a stream): the client got nothing. After output, it is charged what streamed.
		madeNothing("the upstream broke the stream off before any output")
	default:
		// Served, or the client left after the request was forwarded: the reported tokens (or
		// a cut stream's deltas, see usage.Sniffer.Seen) and images are charged, the estimate
		// standing in for what the answer did not report. An image answer's reported size and
		// quality (gpt-image's) price its images; a stream of partial images only (no completed
		// one) reports none, and is charged its estimate.
		// A Responses tool's images are charged as the answer reports them (usage.ResponseImages),
		// as held when it reports none.
		entry.Settled(int64(hold.SettleWithImages(billing.Usage{InputTokens: tokens.Prompt, OutputTokens: tokens.Completion,
			CacheWrite5mTokens: int64(tokens.CacheWrite5m), CacheWrite1hTokens: int64(tokens.CacheWrite1h),
			CacheReadTokens: int64(tokens.CacheRead),
			OutputReported:  tokens.OutputReported(), Images: images, ImageSize: size, ImageQuality: quality}, sw.madeImages())))
		charged = true
	}
	if route.RequestHash != "" && !carried && (sw.status < 200 || sw.status >= 300) {
		if charged {
			// Charged without a 2xx answer to keep (a create its client left, cut after its
			// grace while the provider worked): the key is spent without an answer (a retry
			// gets 409 idempotency_answer_not_kept), never run and charged again.
			idempotency.MarkCut(r.Context())
		} else {
			// Of an idempotent create only what the provider made is kept (a 2xx answer): its
			// refusals (a 408 to retry, a 401 of the operator's credential) free the key.
			idempotency.MarkUnmade(r.Context())
		}
	}
	if hold.Reconciled() && created != nil {
		// The request outlived its hold's deadline: the reconciler released the hold and gave
		// the slot back with it, so the object's record keeps none (the video's record then
		// carries a released hold, and its end charges nothing).
		for _, objectID := range created.KeptObjects() {
			h.accountant.SlotGivenBack(r.Context(), objectID)
		}
	}
	if err != nil && !clientGone && sw.status == 0 {
		// No upstream answered (refused, reset, timed out, every retry spent): the client gets
		// the contract's error in the endpoint's shape, not Caddy's empty error answer.
		h.logger.Error("no upstream answered a pass-through request", zap.String("provider", route.Provider.Name),
			zap.String("upstream", route.Dispatch.Answered().Name), zap.String("model", route.Model), zap.Error(err))
		apierror.Write(w, shape, proxyFailure(err))
		return aborted, nil
	}
	return aborted, err
}

// proxyFailure is the contract error for a request that reverse_proxy returned err for without
// answering: the error itself when it is one (an upstream source's 503 with Retry-After), else by
// the status reverse_proxy chose: 504 upstream_timeout, and 502 invalid_response for the rest of
// the upstream failures (refused, reset, no answer).
func proxyFailure(err error) *apierror.Error {
	if e, ok := errors.AsType[*apierror.Error](err); ok {
		return e
	}
	status := http.StatusBadGateway
	if he, ok := errors.AsType[caddyhttp.HandlerError](err); ok && he.StatusCode >= 400 {
		status = he.StatusCode
	}
	switch {
	case status == http.StatusGatewayTimeout:
		return upstream.ErrTimeout
	case status >= 500:
		return upstream.ErrUnreachable
	}
	return apierror.New(status, strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_")), http.StatusText(status))
}

// takeSlot takes an active-task slot for a create that makes an asynchronous object (see
// passthrough.Route.TakesSlot). At the key's limit it first gives back the slots of the key's
// objects whose lease has ended, then tries once more. (id and route by reference: every
// request passes here, and most take no slot.)
func (h *RouteHandler) takeSlot(ctx context.Context, id *auth.Identity, route *passthrough.Route) (accounting.Slot, error) {
	if !route.TakesSlot() {
		return accounting.Slot{}, nil
	}
	slot, sweepErr, err := h.router.TakeSlot(ctx, h.accountant, *id, route.Model)
	if sweepErr != nil {
		h.logger.Error("ending the lapsed active-task slots of a key failed", zap.String("key_id", id.KeyID), zap.Error(sweepErr))
	}
	return slot, err
}

// objectFinished gives back the slot of an object that a retrieve or delete showed finished, and
// ends the hold a video's record carries by what the answer showed.
func (h *RouteHandler) objectFinished(ctx context.Context, watch *passthrough.ObjectWatch) {
	t, won, err := watch.Finish(context.WithoutCancel(ctx))
	if err != nil {
		h.logger.Error("marking a finished object failed; its slot is given back (and its hold settled) when its lease ends", zap.Error(err))
	}
	if won {
		h.accountant.ObjectFinishedAs(ctx, t, watch.Reported(t))
	}
}

// createdEnded ends an image task whose create's answer showed it final already (see
// passthrough.Router.EndedAtOnce), as a query's answer showing it so would.
func (h *RouteHandler) createdEnded(ctx context.Context, created *passthrough.CreatedWriter) {
	t, won, err := h.router.EndedAtOnce(context.WithoutCancel(ctx), created)
	if err != nil {
		h.logger.Error("marking an image task its create showed finished failed; its slot is given back (and its hold settled) when its lease ends", zap.Error(err))
	}
	if won {
		h.accountant.ObjectFinishedAs(ctx, t, passthrough.ImageTaskReported(t, nil))
	}
}

// remixedSourceCompleted ends the video that an accepted remix names, which its provider
// remixed because it was completed (see passthrough.Router.SourceCompleted).
func (h *RouteHandler) remixedSourceCompleted(ctx context.Context, route passthrough.Route) {
	t, made, won, err := h.router.SourceCompleted(context.WithoutCancel(ctx), route)
	if err != nil {
		h.logger.Error("marking a remixed video finished failed; its slot is given back (and its hold settled) when its lease ends", zap.Error(err))
	}
	if won {
		h.accountant.ObjectFinishedAs(ctx, t, made)
	}
}

// proxyUntilAbort is proxy, which reports the http.ErrAbortHandler panic with which
// reverse_proxy ends an answer cut off midway (the client left) as aborted instead of
// unwinding past the caller. Any other panic goes on.
func (h *RouteHandler) proxyUntilAbort(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, provider string, traced bool) (aborted bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler { //nolint:errorlint // the panic value itself, as net/http compares it
				panic(v)
			}
			aborted = true
		}
	}()
	return false, h.proxy(w, r, next, provider, traced)
}

// proxy runs the reverse_proxy blocks after this handler with r, in a span of the request's
// trace when it is traced (tracedRequest).
func (h *RouteHandler) proxy(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, provider string, traced bool) error {
	if !traced {
		return next.ServeHTTP(w, r)
	}
	ctx, span := tracing.Start(r.Context(), "upstream "+provider, trace.SpanKindClient, attribute.String("mediagw.provider", provider))
	err := next.ServeHTTP(w, r.WithContext(ctx))
	span.End(err)
	return err
}

// UnmarshalCaddyfile sets up the handler. Syntax:
//
//	mediagw_route [<matcher>] {
//		max_json_body <size>
//		spool_memory  <size>
//		max_spool     <size>
//		endpoint      <METHOD> <path>   # repeatable
//		create_grace  <duration>
//	}
func (h *RouteHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if seen[name] && name != "endpoint" {
			return d.Errf("duplicate subdirective %q", name)
		}
		seen[name] = true
		var err error
		switch name {
		case "max_json_body":
			err = sizeArg(d, &h.MaxJSONBody)
		case "spool_memory":
			err = sizeArg(d, &h.SpoolMemory)
		case "max_spool":
			err = sizeArg(d, &h.MaxSpool)
		case "create_grace":
			err = durationArg(d, &h.CreateGrace)
			if err == nil && h.CreateGrace <= 0 {
				err = d.Errf("create_grace must be longer than 0")
			}
		case "endpoint":
			var method, path string
			if !d.Args(&method, &path) || d.NextArg() {
				return d.ArgErr()
			}
			if _, err := passthrough.ParseEndpoint(method, path); err != nil {
				return d.Errf("%v", err)
			}
			h.Endpoints = append(h.Endpoints, method+" "+path)
		default:
			return unknownSubdirective(d, "mediagw_route: ", []string{"max_json_body", "spool_memory", "max_spool", "endpoint", "create_grace"})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*RouteHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*RouteHandler)(nil)
	_ caddyfile.Unmarshaler       = (*RouteHandler)(nil)
)
