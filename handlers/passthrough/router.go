// Package passthrough prepares requests for the capabilities mediagw passes through to providers
// with Caddy's reverse_proxy (chat, responses, messages, generateContent, images, videos, audio,
// embeddings, rerank). It finds the model, checks it against the caller's key, picks the provider
// that serves it, and rewrites the request for that provider: its credentials and its path prefix.
// The body reaches the upstream byte for byte as the client sent it, but for the gateway's own
// rewrites of the checked body, each the value of one member spliced in: a model_map alias, and
// a streamed completion's stream_options (see streamWithUsage).
package passthrough

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/mediagw/mediagw/internal/hdr"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// Defaults of the Router's bounds.
const (
	DefaultMaxJSONBytes = 32 << 20
	DefaultSpoolMemory  = 1 << 20
	// DefaultMaxSpool bounds a whole multipart body, which is read through to the end so that
	// every part's name is checked before anything is forwarded. Past it: 413.
	DefaultMaxSpool    = 512 << 20
	maxModelFieldBytes = 512
)

// Router routes pass-through requests. Fill the exported fields, then call Route.
type Router struct {
	Catalog *providers.Catalog
	// Owners records and finds the owners of upstream objects that pass-through creates.
	Owners Owners
	// Retention is how long ownership records are kept. Default: storage.DefaultTaskRetention.
	Retention time.Duration
	// Extra are the operator's endpoints, forwarded besides Capabilities.
	Extra []Endpoint
	// MaxJSONBytes bounds a JSON body, which is read whole to find the model. Past it: 413.
	MaxJSONBytes int64
	// SpoolMemory is how much of a multipart body is kept in memory; beyond it the body is
	// spooled to a temporary file in TempDir, removed when the request ends.
	SpoolMemory int64
	// MaxSpool bounds a whole multipart body. Past it: 413. Default: DefaultMaxSpool.
	MaxSpool int64
	TempDir  string
	// MaxCreateAnswer bounds a held non-streaming create answer (see CreatedWriter).
	MaxCreateAnswer int
	Logger          *zap.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	sweeps sweepTimes
}

// Route is the outcome of routing one request.
type Route struct {
	Model    string
	Provider *providers.Provider
	// Dispatch is the request's way through the provider's upstreams.
	Dispatch *providers.Dispatch
	// BoundTo is the upstream that created the object a call is about; such a call goes there
	// only.
	BoundTo *providers.Upstream
	// Creates is the kind of upstream object a successful answer creates, if any: wrap the
	// response writer with Router.Created to record its owner.
	Creates string
	// RevealsItems is set when a successful answer hands the caller response items, whose ids
	// Router.Created records as the caller's.
	RevealsItems bool
	// Billable is false for calls on an existing object (retrieve, delete, content) and for
	// counts of input tokens (countTokens, count_tokens, input_tokens), which cost nothing.
	Billable bool
	// CountsTokens is set for a count of input tokens: it holds nothing, but is refused as a
	// hold is while the account is overdrawn (accounting.Accountant.Spendable).
	CountsTokens bool
	// Done releases what routing held (a spool file); call it when the request is finished.
	Done func()
	// Sizing is what a JSON body says about how much the request may use, for its hold.
	Sizing billing.Request
	// ToolImages are the image_generation tools of a Responses body, each running an image model
	// of its own (the provider's default filled in): the images they may make are held besides
	// Sizing, at that model's price (accounting.Accountant.HoldWithToolImages).
	ToolImages []billing.ToolImages
	// Streams is set for a request whose answer is an event stream: a JSON body whose stream
	// member is true, or Gemini's streamGenerateContent. A stream its client leaves is read on
	// for its final usage (see the caller's drain).
	Streams bool
	// Background is set for a Responses body that asks for a background response
	// (backgroundResponse): the provider makes it whether or not the client stays for its
	// stream, so a stream the client leaves is charged the whole estimate.
	Background bool
	// UsageUnasked is set for a streamed completion (chat or legacy) sent without the gateway's
	// stream_options.include_usage, because its provider omits stream_options
	// (providers.Provider.OmitStreamOptions): its stream may end without reporting its usage,
	// and is then charged at least the output its hold estimated, not only the deltas it showed.
	UsageUnasked bool
	// Calls are the model calls of a body that carries several (a Message Batches create),
	// each charged and held at its own model's cost and price; empty for a body of one call.
	Calls []accounting.Call
	// Slot is the active-task slot of a create that TakesSlot, set by the caller before
	// Router.Created; the created object's record keeps it (see active_objects.go).
	Slot accounting.Slot
	// Hold is the create's hold, set by the caller before Router.Created: a video's record
	// carries it (storage.Task.HoldID; see CreatedWriter.HeldBy), and the video's end settles
	// or releases it (accounting.Accountant.ObjectFinished).
	Hold accounting.Hold
	// Endpoint is the request's endpoint label, as its usage record names it, set by the caller
	// before Router.Created: the created object's record keeps it (storage.Task.Endpoint), and
	// the task_finished usage record of the object's end names it.
	Endpoint string
	// IdempotencyKey is the one Idempotency-Key the request sends the provider, as Route scoped
	// it to the account (see scopeIdempotencyKey); "" when it sends none or several. A created
	// object's record keeps it (storage.Task.IdempotencyKey): a later create answered with the
	// same object is the provider's replay of this one only when it sent the same key.
	IdempotencyKey string
	// RequestHash is what a retry of an idempotent create (one that TakesSlot and sends one
	// Idempotency-Key) must match to be answered with its first attempt's answer: see
	// idempotent_create.go. "" for every other request.
	RequestHash string
	// CreateEndpoint is the path pattern of a create that TakesSlot (/v1/videos,
	// /v1/videos/{id}/remix): an idempotent create's key is kept per account and endpoint.
	CreateEndpoint string

	// bodyDigest is the digest of a form's parts (formDigest) of an idempotent create.
	bodyDigest []byte
	// named are the owned objects the body names by id (previous_response_id), which bind the
	// request to the upstream that made them (see bindNamed).
	named []namedObject
	// modelInBody is set when a generate-content body names the path's model again (see
	// checkBodyModels), which an alias cannot be rewritten in.
	modelInBody bool
	// toolModelNames are the models the body's tools name (checkToolModels), which are sent
	// under the provider's names where its model_map maps them (mapToolModels).
	toolModelNames []string
	// watched is the id of a slot-holding object that the call retrieves or deletes (see
	// Router.WatchObject); watchDeletes is set for a delete.
	watched      string
	watchDeletes bool
	// remixOf is the id of the slot-holding video that a remix names: the provider remixes only
	// a completed video, so the remix's answer shows the source's end (see SourceCompleted).
	remixOf string
	// streamOptions are the stream_options that ask a streamed completion's provider for its
	// usage (see askUsage), sent by dispatch unless the provider omits them.
	streamOptions json.RawMessage
}

var (
	errNoEndpoint = apierror.New(http.StatusNotFound, "not_found", "no such endpoint")
	errNoModel    = apierror.New(http.StatusBadRequest, "missing_model", "model is required: give it in the JSON body, the multipart field \"model\", or the path").WithParam("model")
	errBadJSON    = apierror.NotJSONObject("invalid_request_body")
	errModelType  = apierror.New(http.StatusBadRequest, "invalid_request_body", "model must be a string").WithParam("model")
	errMultipart  = apierror.New(http.StatusBadRequest, "invalid_request_body", "the multipart body is malformed")
	errQueryModel = apierror.New(http.StatusBadRequest, "invalid_request_body", "model may not be given in the query: give it in the body or the path").WithParam("model")
	errCoded      = apierror.CompressedBody("invalid_request_body")
	// errMethodOverride refuses a method override, which Google's APIs and many web frameworks
	// honour: POST /v1/videos with X-HTTP-Method-Override: GET would list every video of the
	// operator's upstream account, an endpoint the gateway does not forward. Frameworks that
	// read ?_method= read a POST body's _method too (a JSON member, a form part: methodField).
	errMethodOverride = apierror.New(http.StatusBadRequest, "invalid_request_body", "a request may not override its method (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override, ?_method=, a _method body member or form part): send the method itself")
)

// Route checks that r is a forwarded endpoint (else 404), finds its model and checks it against
// the identity's allow-list and the catalog, or for a call on an existing upstream object checks
// that the caller's account owns it, and rewrites r for the provider: its credentials replace the
// caller's, its base path replaces the client's version prefix, and the body is replayed exactly
// as it was checked. A refusal is an *apierror.Error.
func (rt *Router) Route(w http.ResponseWriter, r *http.Request, id auth.Identity) (Route, error) {
	ep, params, ok := rt.endpoint(r.Method, r.URL.Path)
	if !ok || encodesSeparator(r.URL.RawPath) {
		// An encoded '/', '\' or '.' (chat%2Fcompletions) decodes into the path of an endpoint
		// that a proxy or firewall in front, reading the path as sent, took for another path.
		// An endpoint is a method and a path: another method on a forwarded path is no
		// endpoint either (DESIGN §7), and says nothing of which methods the path takes.
		return Route{}, errNoEndpoint
	}
	contentType := ""
	switch values := r.Header["Content-Type"]; len(values) {
	case 0:
	case 1:
		contentType = values[0]
	default:
		// Decoders differ on which of two values counts; forward only a body read one way.
		return Route{}, apierror.New(http.StatusBadRequest, "invalid_request_body", "the request has more than one Content-Type header").WithParam("Content-Type")
	}
	if !utf8JSON(contentType) {
		return Route{}, notUTF8(r)
	}
	if r.URL.RawQuery != "" && queryNames(r.URL.RawQuery, "model") {
		return Route{}, errQueryModel
	}
	charged := (ep.Object == "" || ep.Creates != "") && !ep.countsTokens
	method, fieldMask := overrides(r.Header)
	if method || r.URL.RawQuery != "" && queryNames(r.URL.RawQuery, "_method") {
		return Route{}, errMethodOverride
	}
	if fieldMask && charged {
		return Route{}, errFieldMask.WithParam("X-Goog-FieldMask")
	}
	if r.URL.RawQuery != "" {
		if err := checkSystemParams(r.URL.RawQuery, charged); err != nil {
			return Route{}, err
		}
	}
	if apierror.Compressed(r) {
		// The body is checked as it was read; an upstream would decode it into another.
		return Route{}, errCoded
	}
	calledPath, calledQuery := r.URL.Path, r.URL.RawQuery
	route := Route{Done: func() {}, Creates: ep.Creates, RevealsItems: ep.RevealsItems, Billable: charged, CountsTokens: ep.countsTokens}
	if route.TakesSlot() {
		// The gateway runs such a create once per key (idempotent_create.go): a header that is
		// no key is refused as the guard refuses it everywhere.
		if err := idempotency.CheckKey(r.Header); err != nil {
			return Route{}, err
		}
		route.CreateEndpoint = ep.Path
	}
	if err := rt.resolve(w, r, id, ep, params, contentType, &route); err != nil {
		route.Done()
		return Route{}, err
	}
	if err := rt.dispatch(r, id.Account, &route); err != nil {
		route.Done()
		return Route{}, err
	}
	route.IdempotencyKey = scopeIdempotencyKey(r.Header, id.Account)
	route.RequestHash = requestHash(r, calledPath, calledQuery, &route)
	// The answer is read for its usage (what the request is charged) and the ids it creates, so
	// the client's Accept-Encoding goes: the proxy's transport asks for gzip itself and decodes.
	hdr.Del(r.Header, "Accept-Encoding")
	return route, nil
}

// Records reports whether the answer has ids to record: wrap the response writer with
// Router.Created.
func (route Route) Records() bool { return route.Creates != "" || route.RevealsItems }

// resolve finds the model and provider of a request whose Content-Type header is contentType.
func (rt *Router) resolve(w http.ResponseWriter, r *http.Request, id auth.Identity, ep Endpoint, params map[string]string, contentType string, route *Route) error {
	if ep.Object != "" {
		return rt.resolveObject(w, r, id, ep, params["id"], route)
	}
	model, err := rt.findModel(w, r, id, ep, params["model"], contentType, route)
	if err != nil {
		return err
	}
	p, err := rt.Catalog.Serving(model, id.AllowsModel)
	if err != nil {
		return err
	}
	route.Model, route.Provider = model, p
	defaultToolModel(route.ToolImages, p.ToolImageModel)
	return bindNamed(route)
}

// resolveObject routes a call on an existing upstream object to the provider that created it,
// for the owning account only.
func (rt *Router) resolveObject(w http.ResponseWriter, r *http.Request, id auth.Identity, ep Endpoint, objectID string, route *Route) error {
	t, err := rt.owned(r.Context(), id, ep.Object, objectID)
	if err != nil {
		return err
	}
	p, ok := rt.Catalog.Provider(t.Provider)
	if !ok {
		return errNoObject // its provider left the config
	}
	if route.BoundTo, ok = p.Bound(t.Upstream, t.UpstreamAddress); !ok {
		return errNoObject // the upstream that created it left the config, or its name now means another address
	}
	if r.ContentLength != 0 && !apierror.IsJSON(r) {
		return apierror.New(http.StatusBadRequest, "invalid_request_body", "a call on an existing object takes no body, or a JSON one")
	}
	var asked *billing.VideoTask // the length and picture a remix's body names
	if r.ContentLength != 0 {
		// A body (a remix prompt, say) may not name another model.
		checked := objectBodyFields
		if route.Creates == KindVideo {
			checked = remixBodyFields
		}
		var fields bodyFields
		body, err := rt.jsonFields(w, r, &fields, checked...)
		if err != nil {
			return err
		}
		if route.Creates == KindVideo {
			asked = videoSizing(jsonVideoValue(&fields))
		}
		if route.Creates != "" {
			// A call that makes something new (a remix) is a media generation: its URLs and
			// references are checked as a create's are.
			if err := rt.checkBodyRefs(r.Context(), id, Endpoint{nested: fileRefs, fetchesURLs: true}, body); err != nil {
				return err
			}
		}
		if raw, ok := fields.get("model"); ok {
			var model string
			if json.Unmarshal(raw, &model) != nil || model != t.Model {
				return apierror.New(http.StatusBadRequest, "invalid_request_body", "model must be the object's own model, "+t.Model).WithParam("model")
			}
		}
	}
	if route.Creates != "" {
		// A call that makes something new (a remix) is a use of the object's model: the key
		// must still be allowed it, and the catalog must still serve it.
		if _, err := rt.Catalog.Serving(t.Model, id.AllowsModel); err != nil {
			return err
		}
	}
	route.Model, route.Provider = t.Model, p
	if route.Creates == KindVideo {
		route.Sizing = remixSizing(t, asked) // a remix: a video of its source's length and picture
	}
	if t.Active && !t.Finished && route.Creates == "" && (r.Method == http.MethodDelete || strings.HasSuffix(ep.Path, "/{id}")) {
		route.watched, route.watchDeletes = t.ID, r.Method == http.MethodDelete
	}
	if t.Active && !t.Finished && route.Creates == KindVideo {
		route.remixOf = t.ID
	}
	return nil
}

// findModel takes the model from the path, the JSON body or the multipart field "model", and
// checks the body's references to owned objects. contentType is the request's Content-Type header.
func (rt *Router) findModel(w http.ResponseWriter, r *http.Request, id auth.Identity, ep Endpoint, pathModel, contentType string, route *Route) (string, error) {
	mt, params, _ := mediaType(contentType)
	isJSON := mt == "application/json" || strings.HasSuffix(mt, "+json")
	var fields bodyFields // a JSON body's checked fields, one variable for every case
	switch {
	case pathModel != "":
		if !isJSON && r.ContentLength != 0 && ep.nested != nil {
			// A body is checked for references only as JSON; an upstream may read it so anyway.
			return "", apierror.New(http.StatusBadRequest, "invalid_request_body", "this endpoint takes a JSON body (Content-Type: application/json)").WithParam("Content-Type")
		}
		if isJSON && r.ContentLength != 0 {
			// The body may not name a model other than the path's.
			body, err := rt.jsonFields(w, r, &fields, refFields(ep)...)
			if err != nil {
				return "", err
			}
			if err := rt.checkRefs(r, id, ep, &fields, route); err != nil {
				return "", err
			}
			if err := rt.checkBodyRefs(r.Context(), id, ep, body); err != nil {
				return "", err
			}
			// Held as any JSON body is (its input from its bytes): a generate-content body's
			// prompt is its input, however long; its output as its generationConfig allows.
			route.Sizing = sizing(ep, &fields, len(body))
			if route.Billable {
				if err := checkService(&fields, ep.nested == messagesRefs); err != nil {
					return "", err
				}
			}
			route.Streams = streamsByPath(ep)
			if ep.modelInBody {
				generationLimits(body, &route.Sizing)
				named, err := checkBodyModels(body, pathModel)
				if err != nil {
					return "", err
				}
				route.modelInBody = named
				return pathModel, nil
			}
			if err := streamAsked(ep, &fields, route); err != nil {
				return "", err
			}
			var model string
			if raw, ok := fields.get("model"); ok && (json.Unmarshal(raw, &model) != nil || model != pathModel) {
				return "", apierror.New(http.StatusBadRequest, "invalid_request_body", "the body's model differs from the path's").WithParam("model")
			}
		}
		return pathModel, nil
	case isJSON && ep.batch:
		body, err := rt.jsonFields(w, r, &fields, refFields(ep)...)
		if err != nil {
			return "", err
		}
		reqs, err := readBatch(body)
		if err != nil {
			return "", err
		}
		if err := rt.checkRefs(r, id, ep, &fields, route); err != nil {
			return "", err
		}
		if err := rt.checkBodyRefs(r.Context(), id, ep, body); err != nil {
			return "", nameBatchRequest(err, reqs)
		}
		route.Calls = batchCalls(reqs)
		return rt.batchModel(id, &fields, reqs)
	case isJSON:
		body, err := rt.jsonFields(w, r, &fields, refFields(ep)...)
		if err != nil {
			return "", err
		}
		if err := rt.checkRefs(r, id, ep, &fields, route); err != nil {
			return "", err
		}
		if err := rt.checkBodyRefs(r.Context(), id, ep, body); err != nil {
			return "", err
		}
		var toolImages []billing.ToolImages
		if ep.toolModels {
			if toolImages, route.toolModelNames, err = checkToolModels(fields.value("tools"), id, toolCalls(&fields), rt.served); err != nil {
				return "", err
			}
			boundToolCalls(toolImages, &fields)
			route.Background = backgroundResponse(fields.value("background"))
			if err := backgroundImagesBounded(route.Background, toolImages); err != nil {
				return "", err
			}
		}
		route.Sizing, route.ToolImages = sizing(ep, &fields, len(body)), toolImages
		// A Messages body that marks a prompt cache point (cache_control, on a block or at its
		// top) may have its input written to a cache, which Anthropic bills at up to twice its
		// input price: held so (billing.Request.CacheWrites).
		route.Sizing.CacheWrites = ep.nested == messagesRefs && marksCachePoint(body)
		if route.Billable {
			if err := checkService(&fields, ep.nested == messagesRefs); err != nil {
				return "", err
			}
		}
		if err := streamAsked(ep, &fields, route); err != nil {
			return "", err
		}
		if createsVideo(ep) {
			if err := oneVideo(jsonVideoValue(&fields)); err != nil {
				return "", err
			}
		}
		return jsonModel(&fields)
	case mt == "multipart/form-data" && params["boundary"] == "" && ep.Multipart:
		return "", apierror.ErrNoBoundary
	case mt == "multipart/form-data" && params["boundary"] != "" && ep.Multipart:
		return rt.multipartModel(w, r, ep, params["boundary"], route)
	case mt == "multipart/form-data":
		return "", apierror.New(http.StatusBadRequest, "invalid_request_body", "this endpoint takes a JSON body (Content-Type: application/json), not multipart/form-data").WithParam("Content-Type")
	}
	return "", errNoModel
}

// jsonFields reads the JSON body (bounded), applies jsonkeys' rule with the checked fields, and
// leaves the body to be replayed byte for byte. It puts the checked fields present in fields
// (filled where the caller keeps it, not copied out), and returns the body. Route has refused a
// compressed body before it is called.
func (rt *Router) jsonFields(w http.ResponseWriter, r *http.Request, fields *bodyFields, checked ...string) ([]byte, error) {
	limit := rt.MaxJSONBytes
	if limit <= 0 {
		limit = DefaultMaxJSONBytes
	}
	body, err := apierror.ReadUncompressedBody(w, r, limit, "invalid_request_body") // Route refused a compressed one
	if err != nil {
		return nil, err
	}
	replay := &replayedBody{body: body}
	replay.Reset(body)
	r.Body, r.GetBody = replay, replay.again
	err = fields.read(body, checked)
	if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
		return nil, apierror.New(http.StatusBadRequest, "invalid_request_body", e.Field+" is refused: "+e.Error()).WithParam(e.Field)
	}
	if err != nil {
		return nil, errBadJSON
	}
	if _, ok := fields.get(methodField); ok {
		return nil, errMethodOverride.WithParam(methodField)
	}
	return body, nil
}

func jsonModel(fields *bodyFields) (string, error) {
	raw, ok := fields.get("model")
	if !ok || string(raw) == "null" {
		return "", errNoModel
	}
	model, err := stringValue(raw)
	if err != nil {
		return "", errModelType
	}
	if model == "" {
		return "", errNoModel
	}
	return model, nil
}

// refFields are the top-level body fields the router reads: model, the priced fields, the
// endpoint's references and, where tools may name models, tools, max_tool_calls and tool_choice
// (which bound the images a tool is held for), a rerank's query and documents (which bound its
// input), and a legacy completion's prompt (held per prompt). The slice is shared by every
// endpoint without
// references: do not
// change it.
func refFields(ep Endpoint) []string {
	if len(ep.Refs) == 0 && !ep.toolModels && !ep.reranks {
		return modelAndPriced
	}
	fields := append(make([]string, 0, len(modelAndPriced)+len(ep.Refs)+4), modelAndPriced...)
	for field := range ep.Refs {
		fields = append(fields, field)
	}
	if ep.toolModels {
		fields = append(fields, "tools", "max_tool_calls", "tool_choice", "background")
	}
	if ep.reranks {
		fields = append(fields, rerankFields...)
	}
	if legacyCompletion(ep) {
		fields = append(fields, promptField) // its prompts are held (timesPrompts)
	}
	return fields
}

// modelAndPriced are model, the priced fields, methodField and the stream members (see
// stream_usage.go), built once: refFields of an
// endpoint without references, and the fields read in a batch line's body. Shared: do not
// change it.
var modelAndPriced = append(append([]string{"model"}, pricedFields...), methodField, streamField, streamOptionsField)

// modelAndPricedFields are modelAndPriced made ready for jsonkeys.MembersOfFields, which
// bodyFields.read reads them with.
var modelAndPricedFields = jsonkeys.NewFields(modelAndPriced...)

// cacheControl is Anthropic's member that marks a prompt cache point, as it appears in a body.
var cacheControl = []byte(`"cache_control"`)

// errCachePoint stops marksCachePoint's walk at the first cache_control member.
var errCachePoint = errors.New("cache_control found")

// marksCachePoint reports whether body has a cache_control member anywhere (or the plain string
// in a value, which costs a hold at the write rate and nothing more). A body with a JSON escape
// (\u) may spell the member's name with escapes ("cache\u005fcontrol"), which Anthropic decodes
// as cache_control: such a body is walked and its keys compared decoded; one whose keys cannot
// be read so counts as marking one, so that the hold is never below the write rate.
func marksCachePoint(body []byte) bool {
	if bytes.Contains(body, cacheControl) {
		return true
	}
	if !bytes.Contains(body, []byte(`\u`)) {
		return false
	}
	err := jsonkeys.Walk(body, func(_ *jsonkeys.Path, members []jsonkeys.Member) error {
		for _, m := range members {
			if m.Key == "cache_control" {
				return errCachePoint
			}
		}
		return nil
	})
	return err != nil
}

// methodField is the body member (and form part) in which web frameworks that honour ?_method=
// take a POST for another method (Laravel and Symfony read it from a JSON body too): every JSON
// body is read for it, and one that has it, in any letter case, is refused (errMethodOverride).
const methodField = "_method"

// checkRefs refuses body fields that name upstream objects the caller's account does not own, and
// keeps the records of those it owns in route.named.
func (rt *Router) checkRefs(r *http.Request, id auth.Identity, ep Endpoint, fields *bodyFields, route *Route) error {
	for field, kind := range ep.Refs {
		raw, ok := fields.get(field)
		if !ok || string(raw) == "null" {
			continue
		}
		var ref string
		if json.Unmarshal(raw, &ref) != nil {
			return apierror.New(http.StatusBadRequest, "invalid_request_body", field+" must be a string").WithParam(field)
		}
		t, err := rt.owned(r.Context(), id, kind, ref)
		if err == errNoObject {
			return errRefused(field, kind)
		} else if err != nil {
			return err
		}
		route.named = append(route.named, namedObject{field: field, kind: kind, record: t})
	}
	return nil
}

// rewrite points r at an upstream: credentials, Host and path prefix. The caller's credentials,
// and a Gemini-style ?key= parameter, are removed. Host is the upstream's own (reverse_proxy
// passes Host through unchanged), so that a tenant cannot pick another virtual host behind the
// provider's address, with the operator's credential attached.
func rewrite(r *http.Request, p *providers.Upstream) {
	p.SetCredentials(r.Header)
	r.Host = p.BaseURL.Host
	if r.URL.RawQuery != "" {
		if q := r.URL.Query(); q.Has("key") {
			q.Del("key")
			r.URL.RawQuery = q.Encode()
		}
	}
	path := r.URL.Path
	rest := path
	if seg, after, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/"); ok && isVersion(seg) {
		rest = path[len(path)-len(after)-1:] // "/" + after, which path holds
	}
	// The usual request names the upstream's own version prefix (/v1/... to a base of /v1):
	// its path stays as it is, without building it again.
	if base := strings.TrimSuffix(p.BaseURL.Path, "/"); len(base)+len(rest) != len(path) || !strings.HasPrefix(path, base) {
		r.URL.Path = base + rest
	}
	r.URL.RawPath = ""
}

// isVersion reports whether a path segment is an API version prefix such as v1 or v1beta.
func isVersion(seg string) bool {
	if len(seg) < 2 || seg[0] != 'v' || seg[1] < '0' || seg[1] > '9' {
		return false
	}
	return strings.IndexFunc(seg[1:], func(c rune) bool { return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') }) < 0
}
