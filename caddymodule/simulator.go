package caddymodule

import (
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/simulator"
)

func init() {
	caddy.RegisterModule(SimulatorHandler{})
}

// SimulatorHandler is a local stand-in upstream for demos, development and load tests: the
// video task protocols ark, dashscope, gemini and kling (tasks go queued → running → succeeded;
// a prompt containing "[[fail]]" fails) and OpenAI-style endpoints. State is in memory and lost on reload. Never needed in
// production.
type SimulatorHandler struct {
	// QueuedFor is how long a simulated task stays queued. Default: 2s.
	QueuedFor *caddy.Duration `json:"queued_for,omitempty"`
	// RunningFor is how long a simulated task runs. Default: 5s.
	RunningFor *caddy.Duration `json:"running_for,omitempty"`
	// VideoURL is the address returned for a finished video; "{id}" becomes the task id.
	// Default: https://simulator.mediagw.invalid/videos/{id}.mp4.
	VideoURL string `json:"video_url,omitempty"`
	// APIKey, when set, is the only bearer token the simulator accepts (expanded from
	// placeholders). Default: any non-empty token.
	APIKey string `json:"api_key,omitempty"`
	// KlingAccessKey and KlingSecretKey are the credential that the kling protocol's requests
	// are signed with (a JWT, as Kling checks it), expanded from placeholders. Without them the
	// simulator refuses Kling requests.
	KlingAccessKey string `json:"kling_access_key,omitempty"`
	KlingSecretKey string `json:"kling_secret_key,omitempty"`

	sim *simulator.Simulator
}

// CaddyModule returns the Caddy module information.
func (SimulatorHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_simulator",
		New: func() caddy.Module { return new(SimulatorHandler) },
	}
}

// Provision builds the simulator.
func (h *SimulatorHandler) Provision(caddy.Context) error {
	h.sim = simulator.New()
	if h.QueuedFor != nil {
		h.sim.QueuedFor = time.Duration(*h.QueuedFor)
	}
	if h.RunningFor != nil {
		h.sim.RunningFor = time.Duration(*h.RunningFor)
	}
	if h.VideoURL != "" {
		h.sim.VideoURL = h.VideoURL
	}
	repl := caddy.NewReplacer()
	h.sim.APIKey = repl.ReplaceKnown(h.APIKey, "")
	h.sim.KlingAccessKey, h.sim.KlingSecretKey = repl.ReplaceKnown(h.KlingAccessKey, ""), repl.ReplaceKnown(h.KlingSecretKey, "")
	if (h.sim.KlingAccessKey == "") != (h.sim.KlingSecretKey == "") {
		return fmt.Errorf("kling_keys needs an access key and a secret key")
	}
	return nil
}

func (h *SimulatorHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.sim.ServeHTTP(w, r)
	return nil
}

// UnmarshalCaddyfile sets up the simulator. Syntax:
//
//	mediagw_simulator [<matcher>] {
//		queued_for  <duration>
//		running_for <duration>
//		video_url   <url>
//		api_key     <key>
//		kling_keys  <access-key> <secret-key>
//	}
func (h *SimulatorHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	return parseBlock(d, map[string]func() error{
		"queued_for": func() error {
			h.QueuedFor = new(caddy.Duration)
			return durationArg(d, h.QueuedFor)
		},
		"running_for": func() error {
			h.RunningFor = new(caddy.Duration)
			return durationArg(d, h.RunningFor)
		},
		"video_url": func() error { return stringArg(d, &h.VideoURL) },
		"api_key":   func() error { return stringArg(d, &h.APIKey) },
		"kling_keys": func() error {
			if !d.AllArgs(&h.KlingAccessKey, &h.KlingSecretKey) {
				return d.Errf("usage: kling_keys <access-key> <secret-key>")
			}
			return nil
		},
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*SimulatorHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*SimulatorHandler)(nil)
	_ caddyfile.Unmarshaler       = (*SimulatorHandler)(nil)
)
