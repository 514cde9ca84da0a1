package passthrough

import (
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

var (
	errModelMember    = apierror.New(http.StatusBadRequest, "invalid_request_body", "model must be the body's top-level \"model\" string member").WithParam("model")
	errAliasMultipart = apierror.New(http.StatusBadRequest, "invalid_request_body", "this model is an alias, which multipart requests cannot use; send the provider's model id").WithParam("model")
)

// dispatch picks the order in which the provider's upstreams are tried (a call on an existing
// object goes to the upstream that created it, and only there), maps the model for the
// upstream, makes the body replayable for a retry, and points r at the first upstream (its
// credentials and base path), so that r is right even for a reverse_proxy without the mediagw
// transport. Every upstream cooling down, or backing account off (see providers.Health), is a
// 503 with Retry-After.
func (rt *Router) dispatch(r *http.Request, account string, route *Route) error {
	p := route.Provider
	var order []*providers.Upstream
	if route.BoundTo != nil {
		order = []*providers.Upstream{route.BoundTo}
	} else {
		var wait time.Duration
		if order, wait = p.Order(account); len(order) == 0 {
			return providers.NoUpstream(p, wait)
		}
	}
	d := providers.NewDispatch(p, order)
	d.Account = account
	d.Model, d.UpstreamModel = route.Model, p.UpstreamModel(route.Model)
	d.Creates = route.Creates != ""
	if route.streamOptions != nil {
		// A streamed completion asks for its usage, unless its provider refuses stream_options.
		if route.UsageUnasked = p.OmitStreamOptions; !p.OmitStreamOptions {
			if err := streamWithUsage(r, route.streamOptions); err != nil {
				return err
			}
		}
	}
	if d.UpstreamModel != d.Model {
		if route.modelInBody {
			return errAliasInBody(d.Model)
		}
		if err := rt.mapModel(r, d); err != nil {
			return err
		}
	}
	if mapsToolModels(p, route.toolModelNames) {
		if err := mapToolModels(r, p); err != nil {
			return err
		}
	}
	d.ToolModels = answerToolModels(p, r.URL.Path, route.toolModelNames)
	switch {
	case r.GetBody != nil:
		d.Body = replayFunc(r.GetBody)
	case r.Body == nil || r.Body == http.NoBody:
		d.Body = replayFunc(func() (io.ReadCloser, error) { return http.NoBody, nil })
	}
	first := d.First()
	rewrite(r, first)
	d.Rest = strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(first.BaseURL.Path, "/"))
	route.Dispatch = d
	return nil
}

// mapModel puts the upstream's model id where the client's was: the {model} segment of the path
// (generate-content), or the JSON body's top-level "model" (only that value's bytes change).
func (rt *Router) mapModel(r *http.Request, d *providers.Dispatch) error {
	if ep, _, ok := rt.endpoint(r.Method, r.URL.Path); ok && strings.Contains(ep.Path, "{model}") {
		want, got := strings.Split(ep.Path, "/"), strings.Split(r.URL.Path, "/")
		for i, w := range want {
			if strings.HasPrefix(w, "{model}") && i < len(got) && strings.HasPrefix(got[i], d.Model) {
				got[i] = d.UpstreamModel + strings.TrimPrefix(got[i], d.Model)
			}
		}
		r.URL.Path, r.URL.RawPath = strings.Join(got, "/"), ""
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		return errAliasMultipart
	}
	if r.GetBody == nil {
		return nil // no body: nothing names the model
	}
	body, err := replayedBytes(r)
	if err != nil {
		return err
	}
	mapped, ok := providers.ReplaceModel(body, d.UpstreamModel)
	if !ok {
		if fields, err := jsonkeys.Members(body, "model"); err == nil && fields["model"] == nil {
			return nil // a call on an object (a remix prompt) names no model: the upstream keeps the object's
		}
		return errModelMember
	}
	setBody(r, mapped)
	return nil
}

// answeredBy is the name of the upstream whose answer the client got ("" when unknown, which
// task records read as the provider's first upstream).
func (route Route) answeredBy() string {
	if route.Dispatch == nil {
		return ""
	}
	return route.Dispatch.Answered().Name
}

// answeredAt is the address of the upstream that answered (see providers.Upstream.Address), or
// empty when the request was not dispatched by mediagw.
func (route Route) answeredAt() string {
	if route.Dispatch == nil {
		return ""
	}
	return route.Dispatch.Answered().Address()
}

// replayFunc replays a body held whole.
type replayFunc func() (io.ReadCloser, error)

func (f replayFunc) Replay() (io.ReadCloser, error) { return f() }
