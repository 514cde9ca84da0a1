// Package adaptor is the boundary between the video task API and an upstream provider's own task
// protocol. The task API (package videotask) keeps the task table, ownership, the watcher,
// billing and callbacks; an Adaptor is the only code that knows a provider's wire format: how a
// task is created, read, cancelled and how its result is fetched.
//
// One protocol is one package below this one (dashscope, gemini, kling, minimax, openai); adding a
// provider is adding such a package, its strict fake (integration/fake_*_test.go) and its entry
// in videotask's adaptors. The Ark protocol, which the task API speaks to clients, is served by
// package videotask itself: its answers pass through (see Ark).
//
// Every adaptor follows the same mapping rules: every field of the contract's create request is
// accepted (the task API has checked it); the adaptor sends what the provider supports and
// ignores the rest without an error; every provider state becomes one of the contract's states,
// an unknown one StatusUnknown (the task API keeps such a task running until its
// execution_expires_after, then expires it); a provider's error becomes ErrorCode and
// ErrorMessage; the actual duration, resolution and ratio are reported when the provider reports
// them, with the Usage that prices need.
package adaptor

import (
	"context"
	"errors"
	"net/http"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/upstream"
)

// Protocol names, as the Caddyfile's `protocol` subdirective of a provider spells them.
const (
	// Ark is the BytePlus/Volcengine Ark task protocol, the task API's own: its answers pass
	// through videotask unchanged, so it has no Adaptor. The default.
	Ark = "ark"
	// DashScope is Alibaba Cloud Model Studio's asynchronous video synthesis (Wan models).
	DashScope = "dashscope"
	// Gemini is Veo through the Gemini API's predictLongRunning and its operations.
	Gemini = "gemini"
	// Kling is Kling's text-to-video and image-to-video task API, authenticated with a JWT.
	Kling = "kling"
	// MiniMax is MiniMax's Hailuo video generation, whose result is a file id.
	MiniMax = "minimax"
	// OpenAI is OpenAI's videos API (POST /v1/videos, GET /v1/videos/{id} and its content), as
	// OpenAI or another gateway serves it.
	OpenAI = "openai"
)

// The states of a task as the contract names them (spec §3.1), and StatusUnknown for a provider
// state that no rule maps.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusExpired   = "expired"
	// StatusUnknown is a provider state that no rule maps: the task stays running until its
	// execution_expires_after, then the task API expires it.
	StatusUnknown = ""
)

// States maps a provider's state names onto the Status constants.
type States map[string]string

// Of is the contract's state of a provider state; StatusUnknown for a name the map lacks.
func (s States) Of(name string) string { return s[name] }

// Adaptor creates and follows tasks at one provider protocol. Its methods are called
// concurrently; an Adaptor keeps no state of a task (the task API stores what it returns).
type Adaptor interface {
	// Create creates the task upstream and returns the provider's id for it, which the task
	// API keeps (storage.Task.UpstreamID) and gives back to Read, Cancel and Content.
	Create(ctx context.Context, c Caller, r Request) (upstreamID string, err error)
	// Read reads the task's state; r is the task's create request, for what the provider does
	// not report (the usage of a provider that reports no duration is the requested one). A
	// task the provider does not know is ErrNotFound; a 429 is a *Throttled error.
	Read(ctx context.Context, c Caller, upstreamID string, r Request) (State, error)
	// Cancel cancels an unfinished task, or deletes a finished one, where the provider allows
	// it; otherwise ErrUnsupported.
	Cancel(ctx context.Context, c Caller, upstreamID string) error
	// Content opens the finished task's video with the operator's credential, for a result
	// that needs it (State.Credentialed); otherwise ErrUnsupported. The caller closes the body.
	Content(ctx context.Context, c Caller, upstreamID string) (*http.Response, error)
}

// Caller makes the calls of an adaptor to the upstream a task is bound to: the upstream's base
// URL, its credential (set after the adaptor's own headers, so never replaced by them), its
// timeout, tracing and metrics.
type Caller interface {
	// Call sends one request to the endpoint rel (relative to the upstream's base URL) with a
	// JSON body when body is not nil, and the extra headers given.
	Call(ctx context.Context, method, rel string, body []byte, header http.Header) (upstream.Answer, error)
	// Open sends a GET to an absolute URL that the provider returned, or to an endpoint
	// relative to the upstream's base URL (no scheme), and answers the response to stream. The
	// upstream's credential is sent only to the upstream's own origin, never across a redirect
	// (see upstream.Client.Open).
	Open(ctx context.Context, rawURL string) (*http.Response, error)
}

// Locator is an Adaptor whose Content looks the result up (a read of the task, a file's
// download address) before it opens it: Locate is that lookup, whose address the content
// endpoint shares among the concurrent reads of one task, so that they make one lookup.
type Locator interface {
	// Locate answers the address of a finished task's video, which Caller.Open opens (with the
	// credential on the upstream's own origin only); a task without a result is ErrNotFound.
	Locate(ctx context.Context, c Caller, upstreamID string) (string, error)
}

// Deleter is an Adaptor whose provider keeps a finished task's result until it is deleted: the
// task API deletes it upstream when the task's owner deletes the finished task.
type Deleter interface {
	// Delete removes a finished task upstream; a task the provider no longer knows is
	// ErrNotFound.
	Delete(ctx context.Context, c Caller, upstreamID string) error
}

// Planner is an Adaptor that knows, before the create, the video its provider makes for r: the
// length and resolution it asks for, or the provider's defaults where it asks for nothing (a
// length or resolution the provider does not offer is not sent, or is sent as the nearest one it
// offers). Its Read reports the same as the task's usage where the provider reports no length or
// size. The task's hold counts this video (billing.VideoTask.Planned), so that it is not below
// what the task settles at, and the OpenAI-style front answers it until the provider reports the
// actual video.
type Planner interface {
	Plan(r Request) billing.PlannedVideo
}

// State is a task's state as an adaptor read it.
type State struct {
	// Status is one of the Status constants; StatusUnknown for a state that no rule maps.
	Status string
	// ProviderStatus is the provider's own name of the state, for logs and the docs.
	ProviderStatus string
	// ErrorCode and ErrorMessage describe a failed task, as the provider did.
	ErrorCode, ErrorMessage string
	// VideoURL is the result: a URL any client can fetch, unless Credentialed.
	VideoURL string
	// Credentialed marks a result that needs the operator's credential to download (a Veo file
	// URI): it never reaches the client, which gets the owner-only content endpoint instead.
	Credentialed bool
	// LastFrameURL is the result's last frame, when the provider returns one.
	LastFrameURL string
	// Duration (seconds), Resolution ("720p") and Ratio ("16:9") are the output's, when the
	// provider reports them.
	Duration   int64
	Resolution string
	Ratio      string
	// Usage is what the finished task consumed, for billing.
	Usage billing.Usage
}

// Errors an adaptor returns besides a provider's refusal (an *apierror.Error).
var (
	// ErrNotFound is a task the provider does not know (any more).
	ErrNotFound = errors.New("the provider does not know the task")
	// ErrUnsupported is an operation the protocol does not offer.
	ErrUnsupported = errors.New("the provider's protocol does not offer this operation")
)
