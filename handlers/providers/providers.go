// Package providers describes the upstream model providers and which provider serves each model.
package providers

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// Auth styles: how a provider expects its credential.
const (
	AuthBearer     = "bearer"         // Authorization: Bearer <key> (OpenAI, Ark, most others)
	AuthXAPIKey    = "x-api-key"      // x-api-key: <key> (Anthropic messages)
	AuthGoogAPIKey = "x-goog-api-key" // x-goog-api-key: <key> (Gemini generateContent)
)

// Provider is one upstream that serves a set of models.
type Provider struct {
	// Name identifies the provider in config, logs and the {mediagw.provider} placeholder.
	Name string
	// BaseURL is the upstream's base address including its path prefix, e.g.
	// https://api.openai.com/v1 or https://ark.ap-southeast.bytepluses.com/api/v3.
	BaseURL *url.URL
	// APIKey is the provider's credential, already expanded from its placeholder.
	APIKey string
	// AuthStyle is one of AuthBearer (default), AuthXAPIKey, AuthGoogAPIKey.
	AuthStyle string
	// Models are the model ids this provider serves.
	Models []string
	// Costs are the quota cost per request or task of each model; "*" sets the default.
	// Without an entry a model costs 1.
	Costs map[string]int64
}

// Cost is the quota cost of one request or task with model.
func (p *Provider) Cost(model string) int64 {
	if c, ok := p.Costs[model]; ok {
		return c
	}
	if c, ok := p.Costs["*"]; ok {
		return c
	}
	return 1
}

// SetCredentials replaces any credential on an outgoing request with the provider's own.
func (p *Provider) SetCredentials(h http.Header) {
	h.Del("Authorization")
	h.Del("X-Api-Key")
	h.Del("X-Goog-Api-Key")
	if p.APIKey == "" {
		return
	}
	switch p.AuthStyle {
	case AuthXAPIKey:
		h.Set("X-Api-Key", p.APIKey)
	case AuthGoogAPIKey:
		h.Set("X-Goog-Api-Key", p.APIKey)
	default:
		h.Set("Authorization", "Bearer "+p.APIKey)
	}
}

// Endpoint returns the provider URL for a path relative to its base, e.g. "contents/generations/tasks".
func (p *Provider) Endpoint(rel string) string {
	return strings.TrimSuffix(p.BaseURL.String(), "/") + "/" + strings.TrimPrefix(rel, "/")
}

// Catalog maps model ids to the provider that serves them.
type Catalog struct {
	providers []*Provider
	byModel   map[string]*Provider
	models    []string
}

// NewCatalog checks that every provider is complete and that no model is served by two.
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
		if p.BaseURL == nil || p.BaseURL.Host == "" || (p.BaseURL.Scheme != "http" && p.BaseURL.Scheme != "https") {
			return nil, fmt.Errorf("provider %q: base_url must be an absolute http(s) URL", p.Name)
		}
		switch p.AuthStyle {
		case "", AuthBearer, AuthXAPIKey, AuthGoogAPIKey:
		default:
			return nil, fmt.Errorf("provider %q: unknown auth style %q", p.Name, p.AuthStyle)
		}
		for _, m := range p.Models {
			if other, ok := c.byModel[m]; ok {
				return nil, fmt.Errorf("model %q is served by two providers: %q and %q", m, other.Name, p.Name)
			}
			c.byModel[m] = p
			c.models = append(c.models, m)
		}
	}
	slices.Sort(c.models)
	return c, nil
}

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
		return nil, apierror.New(http.StatusForbidden, "model_not_allowed", "this API key may not use model "+model).WithParam("model")
	}
	p, ok := c.byModel[model]
	if !ok {
		return nil, apierror.New(http.StatusNotFound, "model_not_found", "the model "+model+" does not exist or is not served here").WithParam("model")
	}
	return p, nil
}
