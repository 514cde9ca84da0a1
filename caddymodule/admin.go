package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/usage"
)

func init() {
	caddy.RegisterModule(AdminAPI{})
}

// AdminAPI serves key and account management on Caddy's admin endpoint:
//
//	GET    /mediagw/keys?account=&after=&before=&limit=
//	                                     a page of keys by id (configured ones marked
//	                                     read_only); the next page's after in Mediagw-Next
//	POST   /mediagw/keys                 create a key; the answer holds the secret, shown once
//	GET    /mediagw/keys/{id}            show a key
//	PATCH  /mediagw/keys/{id}            change disabled, models, allow_ips, expires, quota,
//	                                     rate, max_active_tasks
//	DELETE /mediagw/keys/{id}            revoke a key
//	GET    /mediagw/keys/{id}/usage      requests, tasks, quota used
//	GET    /mediagw/accounts?after=&before=&limit=
//	                                     a page of accounts by name, paged as the keys
//	GET    /mediagw/accounts/{name}      show an account
//	PATCH  /mediagw/accounts/{name}      {"disabled": true|false}
//	GET    /mediagw/accounts/{name}/usage
//	POST   /mediagw/accounts/{name}/credit  {"amount": "12.5", "note": "...", "adjust": false}
//	                                     with Idempotency-Key; a negative amount needs adjust
//	GET    /mediagw/accounts/{name}/balance
//	GET    /mediagw/accounts/{name}/ledger?after=&limit=
//	                                     the account's ledger, a page at a time; JSON, or CSV
//	                                     with Accept: text/csv or ?format=csv
//	GET    /mediagw/usage?account=&from=&to=&group_by=day,account,model
//	                                     usage aggregates per account, model and day; JSON, or
//	                                     CSV with Accept: text/csv
//	GET    /mediagw/upstreams            every provider's upstreams: healthy, or cooling down
//	                                     until when, and their recent failures
//
// Changes take effect on the next request, without a reload. The admin endpoint has no
// authentication of its own: keep it on a loopback address or a unix socket (Caddy's default).
type AdminAPI struct {
	keys    *keyadmin.Handler
	usage   *usage.Recorder
	catalog *providers.Catalog
}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.mediagw",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// Provision finds the mediagw app, if one is configured.
func (a *AdminAPI) Provision(ctx caddy.Context) error {
	v, err := ctx.AppIfConfigured("mediagw")
	if err != nil {
		return nil // no mediagw app: the routes answer 404
	}
	app := v.(*App)
	a.keys = &keyadmin.Handler{Store: app.store, Static: app.staticByID, DisabledAccounts: app.disabledAccts,
		Meter: app.accountant.Meter, WebhookKey: app.runtime.key}
	a.usage = app.usage
	a.catalog = app.catalog
	return nil
}

// Routes returns the admin routes.
func (a *AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/mediagw/", Handler: caddy.AdminHandlerFunc(a.serve)}}
}

func (a *AdminAPI) serve(w http.ResponseWriter, r *http.Request) error {
	if a.keys == nil {
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Message: "mediagw is not configured"}
	}
	if r.URL.Path == "/mediagw/usage" {
		a.usage.ServeReport(w, r)
		return nil
	}
	if r.URL.Path == upstreamsPath {
		return serveUpstreams(w, r, a.catalog)
	}
	a.keys.ServeHTTP(w, r)
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner = (*AdminAPI)(nil)
	_ caddy.AdminRouter = (*AdminAPI)(nil)
)
