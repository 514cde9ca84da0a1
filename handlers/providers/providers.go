// Package providers describes the upstream model providers and which provider serves each model.
package providers

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// Auth styles: how a provider expects its credential.
const (
	AuthBearer     = "bearer"         // Authorization: Bearer <key> (OpenAI, Ark, most others)
	AuthXAPIKey    = "x-api-key"      // x-api-key: <key> (Anthropic messages)
	AuthGoogAPIKey = "x-goog-api-key" // x-goog-api-key: <key> (Gemini generateContent)
)

// Provider serves a set of models through one or more upstreams (accounts).
type Provider struct {
	// Name identifies the provider in config, logs and the {mediagw.provider} placeholder.
	Name string
	// BaseURL and APIKey are the shorthand for a provider with one upstream: when Upstreams is
	// empty, NewCatalog makes an upstream named "default" of them. Otherwise NewCatalog sets them
	// to the first upstream's.
	BaseURL *url.URL
	APIKey  string
	// Upstreams are the accounts that serve the provider's models, in configuration order.
	Upstreams []*Upstream
	// ModelMap maps a client's model id to the id sent upstream. Clients only ever see their id.
	ModelMap map[string]string
	// AuthStyle is one of AuthBearer (default), AuthXAPIKey, AuthGoogAPIKey.
	AuthStyle string
	// Protocol is the task protocol the provider's upstreams speak for video tasks: "ark" (the
	// default, the empty string), or the name of a video task adaptor (package
	// videotask/adaptor). The configuration checks the name. "ark" itself, unlike the empty
	// string, also sends image edits as Seedream image generations (package imageedit).
	Protocol string
	// Models are the model ids this provider serves.
	Models []string
	// ToolImageModel is the image model the provider runs for a Responses image_generation tool
	// that names none, whose price prices that tool's images; "" is
	// billing.DefaultToolImageModel, OpenAI's default.
	ToolImageModel string
	// OmitStreamOptions keeps the gateway from adding stream_options.include_usage to a
	// streamed chat or legacy completion, for a provider that refuses the member: such a stream
	// that ends without its usage is charged at least its hold's output estimate.
	OmitStreamOptions bool

	health *Board
	// clients maps each upstream id of ModelMap to a client id that maps to it (the first in
	// order, when several do): ClientModels.
	clients map[string]string
}

// SetCredentials replaces any credential on an outgoing request with the first upstream's.
func (p *Provider) SetCredentials(h http.Header) { p.primary().SetCredentials(h) }

// Credentials are the first upstream's credentials (see Upstream.Credentials), which
// SetCredentials sends.
func (p *Provider) Credentials() []string { return p.primary().Credentials() }

// Endpoint returns the first upstream's URL for a path relative to its base.
func (p *Provider) Endpoint(rel string) string { return p.primary().Endpoint(rel) }

// primary is the first upstream, or for a provider that NewCatalog has not checked, the one its
// BaseURL and APIKey describe.
func (p *Provider) primary() *Upstream {
	if len(p.Upstreams) > 0 {
		return p.Upstreams[0]
	}
	return &Upstream{Name: DefaultUpstreamName, BaseURL: p.BaseURL, APIKey: p.APIKey, AuthStyle: p.AuthStyle, provider: p.Name}
}

// Label names the provider in logs.
func (p *Provider) Label() string { return p.Name }

// Upstream returns the upstream of that name. The empty name, which task records written before
// upstreams had names carry, is the first upstream.
func (p *Provider) Upstream(name string) (*Upstream, bool) {
	if name == "" {
		return p.primary(), true
	}
	for _, u := range p.Upstreams {
		if u.Name == name {
			return u, true
		}
	}
	return nil, false
}

// Bound returns the upstream that a record names, if it is still configured: the upstream of
// that name (see Upstream) at the same address (see Upstream.Address). A name reused for another
// base URL is another upstream, so it is not returned: the record's object stays where it was
// made, never asked for (with its id) at the new address. A record without an address (written
// before addresses were kept) is bound by name alone. A new API key at the same address (a key
// rotation) keeps the binding.
func (p *Provider) Bound(name, address string) (*Upstream, bool) {
	u, ok := p.Upstream(name)
	if !ok || address != "" && u.Address() != address {
		return nil, false
	}
	return u, true
}

// UpstreamModel is the model id to send upstream for a client's model id.
func (p *Provider) UpstreamModel(model string) string {
	if m, ok := p.ModelMap[model]; ok {
		return m
	}
	return model
}

// Catalog maps model ids to the provider that serves them.
type Catalog struct {
	providers []*Provider
	byModel   map[string]*Provider
	models    []string
	health    *Board
}

// NewCatalog checks that every provider is complete and that no model is served by two. Its
// upstreams' health is kept on a board of their own until WithHealth shares one.
func NewCatalog(list []*Provider) (*Catalog, error) {
	c := &Catalog{providers: list, byModel: map[string]*Provider{}}
	names := map[string]bool{}
	for _, p := range list {
		if p.Name == "" {
			return nil, fmt.Errorf("a provider has no name")
		}
		if names[p.Name] {
			return nil, fmt.Errorf("provider %q is defined twice", p.Name)
		}
		names[p.Name] = true
		if err := p.checkUpstreams(); err != nil {
			return nil, err
		}
		served := slices.Clone(p.Models)
		for m := range p.ModelMap {
			if !slices.Contains(served, m) {
				served = append(served, m)
			}
		}
		p.Models = served
		for _, m := range served {
			if other, ok := c.byModel[m]; ok {
				return nil, fmt.Errorf("model %q is served by two providers: %q and %q", m, other.Name, p.Name)
			}
			c.byModel[m] = p
			c.models = append(c.models, m)
		}
	}
	slices.Sort(c.models)
	return c.WithHealth(NewBoard()), nil
}

// checkUpstreams makes the shorthand upstream, checks every upstream and links it to p.
func (p *Provider) checkUpstreams() error {
	switch p.AuthStyle {
	case "", AuthBearer, AuthXAPIKey, AuthGoogAPIKey, AuthKlingJWT:
	default:
		return fmt.Errorf("provider %q: unknown auth style %q", p.Name, p.AuthStyle)
	}
	if len(p.Upstreams) == 0 {
		p.Upstreams = []*Upstream{{Name: DefaultUpstreamName, BaseURL: p.BaseURL, APIKey: p.APIKey}}
	}
	names := map[string]bool{}
	for _, u := range p.Upstreams {
		if u.Name == "" || names[u.Name] {
			return fmt.Errorf("provider %q: every upstream needs a name of its own", p.Name)
		}
		names[u.Name] = true
		if u.BaseURL == nil || u.BaseURL.Host == "" || (u.BaseURL.Scheme != "http" && u.BaseURL.Scheme != "https") {
			return fmt.Errorf("provider %q: upstream %q: base_url must be an absolute http(s) URL", p.Name, u.Name)
		}
		if u.Weight < 0 || u.Priority < 0 || u.MaxRPS < 0 {
			return fmt.Errorf("provider %q: upstream %q: weight, priority and max_rps must not be negative", p.Name, u.Name)
		}
		u.provider, u.AuthStyle = p.Name, p.AuthStyle
		if (p.AuthStyle == AuthKlingJWT) != (u.AccessKey != "" || u.SecretKey != "") ||
			p.AuthStyle == AuthKlingJWT && (u.AccessKey == "" || u.SecretKey == "" || u.APIKey != "") {
			return fmt.Errorf("provider %q: upstream %q: access_key and secret_key, and no api_key, are the credential of protocol kling only", p.Name, u.Name)
		}
		u.prepare() // before the upstream is shared between requests
	}
	p.BaseURL, p.APIKey = p.Upstreams[0].BaseURL, p.Upstreams[0].APIKey
	p.clients = nil
	for client, up := range p.ModelMap {
		if client == "" || up == "" {
			return fmt.Errorf("provider %q: model_map needs a client id and an upstream id", p.Name)
		}
		if p.clients == nil {
			p.clients = map[string]string{}
		}
		if shown, ok := p.clients[up]; !ok || client < shown {
			p.clients[up] = client
		}
	}
	return nil
}

// ClientModels maps each upstream id that the provider's model_map sends to a client id that maps
// to it (the first in order when several do), for showing answers (AnswerModels.Tools); nil
// without a model_map. Shared: do not change it.
func (p *Provider) ClientModels() map[string]string { return p.clients }

// WithHealth makes every upstream of the catalog keep its health on b, which may be shared
// across config reloads, and returns c.
func (c *Catalog) WithHealth(b *Board) *Catalog {
	c.health = b
	for _, p := range c.providers {
		p.health = b
		for _, u := range p.Upstreams {
			u.health = b
		}
	}
	return c
}

// Provider returns the provider of that name.
func (c *Catalog) Provider(name string) (*Provider, bool) {
	for _, p := range c.providers {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// Providers returns the providers in configuration order.
func (c *Catalog) Providers() []*Provider { return c.providers }

// Health is the board the catalog's upstreams keep their health on.
func (c *Catalog) Health() *Board { return c.health }

// ProviderFor returns the provider that serves a model.
func (c *Catalog) ProviderFor(model string) (*Provider, bool) {
	p, ok := c.byModel[model]
	return p, ok
}

// Models returns every served model id, sorted.
func (c *Catalog) Models() []string { return c.models }

// Serving returns the provider of model for a caller whose key allows the given model patterns
// check: 403 model_not_allowed when the key may not use it, 404 model_not_found when no provider
// serves it.
func (c *Catalog) Serving(model string, allowed func(model string) bool) (*Provider, error) {
	if !allowed(model) {
		return nil, apierror.New(http.StatusForbidden, "model_not_allowed", "this API key may not use model "+apierror.Echo(model)).WithParam("model")
	}
	p, ok := c.byModel[model]
	if !ok {
		return nil, apierror.New(http.StatusNotFound, "model_not_found", "the model "+apierror.Echo(model)+" does not exist or is not served here").WithParam("model")
	}
	return p, nil
}
