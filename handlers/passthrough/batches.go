package passthrough

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// A Message Batches create (an operator's endpoint with a messages segment followed by a batches
// segment, such as POST /v1/messages/batches) holds many Messages bodies, each the params of one
// of its requests: {"requests":[{"custom_id":"a","params":{"model":…,"messages":…}},…]}. Each
// params gets the checks of a POST /v1/messages body: its model must be one the key allows and
// the catalog serves, and its references (container, custom skills, file_id) must be the
// caller's own (messageBatchRefs). Media URLs are checked at any depth of any body. The whole
// batch goes to one upstream, so every model must be served by one provider, by its own id (an
// alias would have to be rewritten in each params; it is refused). A refused request is named by
// its place in the error's param (requests[3].params.model) and by its custom_id in the message.

// batchRequest is one request of a Message Batches body, as the router reads it.
type batchRequest struct {
	// param is the request's place: requests[i] (and, for a lenient upstream's reading,
	// requests as one object, or an element of a nested array).
	param    string
	customID string
	// model is params.model; modelParam is where it sits.
	model, modelParam string
	// sizing is what params says about how much the request may use, for the batch's hold.
	sizing billing.Request
}

// isBatchEndpoint reports whether an operator's endpoint path is a Message Batches create: a
// messages segment directly followed by a batches segment.
func isBatchEndpoint(segs []string) bool {
	for i := 1; i < len(segs); i++ {
		if segs[i-1] == "messages" && segs[i] == "batches" {
			return true
		}
	}
	return false
}

// batchRequestPath reports whether path is a request of a Message Batches body: an element of
// the top-level requests array, of an array nested in it, or requests itself when it is one
// object (any of which a lenient upstream may read as a request).
func batchRequestPath(path *jsonkeys.Path) bool {
	for path != nil && path.Index >= 0 {
		path = path.Parent
	}
	return foldedTop(path, "requests")
}

// batchParamsPath reports whether path is the params of a request of a Message Batches body: the
// root of a Messages body within it.
func batchParamsPath(path *jsonkeys.Path) bool {
	return path != nil && path.Index < 0 && strings.EqualFold(path.Key, "params") && batchRequestPath(path.Parent)
}

// readBatch reads the requests of a Message Batches body (valid JSON, see walkRefs): each one's
// custom_id and model. A request without params, or whose params name no model, is refused like
// a Messages body without one; a key that appears in two letter cases (params, custom_id, model)
// is refused.
func readBatch(body []byte) ([]batchRequest, error) {
	var reqs []batchRequest
	err := jsonkeys.WalkValid(body, func(path *jsonkeys.Path, members []jsonkeys.Member) error {
		if !batchRequestPath(path) {
			return nil
		}
		customID, err := only(path, members, "custom_id")
		if err != nil {
			return err
		}
		if _, err := only(path, members, "params"); err != nil {
			return err
		}
		req := batchRequest{param: path.String(), customID: customID}
		paramsPath := member(path, "params")
		var params json.RawMessage
		for _, m := range members {
			if strings.EqualFold(m.Key, "params") {
				paramsPath, params = member(path, m.Key), m.Value
			}
		}
		req.modelParam = member(paramsPath, "model").String()
		if len(params) == 0 || params[0] != '{' {
			return errNoModel.WithParam(req.modelParam)
		}
		// The priced fields are read under the model's rule, so what the upstream reads is
		// what was held.
		fields, err := readFields(params, modelAndPriced)
		if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
			field := member(paramsPath, e.Field).String()
			return apierror.New(http.StatusBadRequest, "invalid_request_body", field+" is refused: "+e.Error()).WithParam(field)
		} else if err != nil {
			return errBadJSON
		}
		if req.model, err = jsonModel(&fields); err != nil {
			if e, ok := errors.AsType[*apierror.Error](err); ok {
				return e.WithParam(req.modelParam)
			}
			return err
		}
		if err := checkService(&fields, true); err != nil {
			if e, ok := errors.AsType[*apierror.Error](err); ok {
				return e.WithParam(member(paramsPath, e.Param).String())
			}
			return err
		}
		req.sizing = sizing(Endpoint{}, &fields, len(params))
		reqs = append(reqs, req)
		return nil
	})
	return reqs, walkError(err)
}

// batchModel checks the models of a Message Batches body: the top-level model, if there is one,
// and each request's, which must all be allowed to the key, served by one provider, and not
// aliases. It returns the model the batch is routed by: the top-level one, else the first
// request's.
func (rt *Router) batchModel(id auth.Identity, fields *bodyFields, reqs []batchRequest) (string, error) {
	if _, ok := fields.get("model"); ok {
		model, err := jsonModel(fields)
		if err != nil {
			return "", err
		}
		reqs = append([]batchRequest{{model: model, modelParam: "model"}}, reqs...)
	}
	if len(reqs) == 0 {
		return "", errNoModel.WithParam("requests")
	}
	var first *providers.Provider
	seen := make(map[string]bool)
	for _, req := range reqs {
		if seen[req.model] {
			continue
		}
		seen[req.model] = true
		p, err := rt.Catalog.Serving(req.model, id.AllowsModel)
		if err != nil {
			if e, ok := errors.AsType[*apierror.Error](err); ok {
				return "", namedRequest(e.WithParam(req.modelParam), req)
			}
			return "", err
		}
		switch {
		case p.UpstreamModel(req.model) != req.model:
			return "", namedRequest(apierror.New(http.StatusBadRequest, "invalid_request_body",
				"model "+req.model+" is an alias, which a batch cannot use; send the provider's model id").WithParam(req.modelParam), req)
		case first == nil:
			first = p
		case p != first:
			return "", namedRequest(apierror.New(http.StatusBadRequest, "invalid_request_body",
				"every request of a batch must use a model of one provider: model "+req.model+" is served by another provider than "+reqs[0].model).WithParam(req.modelParam), req)
		}
	}
	return reqs[0].model, nil
}

// batchCalls are the model calls of a Message Batches body, each held at its own model's price
// (see accounting.HoldCalls).
func batchCalls(reqs []batchRequest) []accounting.Call {
	calls := make([]accounting.Call, len(reqs))
	for i, req := range reqs {
		calls[i] = accounting.Call{Model: req.model, Request: req.sizing}
	}
	return calls
}

// nameBatchRequest adds the request of a Message Batches body that a refusal is about (its param
// lies within the request's) to the refusal's message, by custom_id.
func nameBatchRequest(err error, reqs []batchRequest) error {
	e, ok := errors.AsType[*apierror.Error](err)
	if !ok {
		return err
	}
	for _, req := range reqs {
		if rest, ok := strings.CutPrefix(e.Param, req.param); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return namedRequest(e, req)
		}
	}
	return err
}

// maxShownCustomID bounds how much of a custom_id an error message repeats.
const maxShownCustomID = 64

// namedRequest prefixes a refusal's message with the request it is about: its place and its
// custom_id.
func namedRequest(e *apierror.Error, req batchRequest) *apierror.Error {
	if req.param == "" {
		return e // the batch's own model
	}
	c := *e
	id := req.customID
	if len(id) > maxShownCustomID {
		id = strings.ToValidUTF8(id[:maxShownCustomID], "") + "…"
	}
	c.Message = req.param + " (custom_id " + strconv.Quote(id) + "): " + e.Message
	return &c
}
