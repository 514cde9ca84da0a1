package videotask

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/percent"
	"github.com/mediagw/mediagw/storage"
)

// A result URL that carries the operator's credential (a provider that signs its result links
// with the caller's key or token, ?api_key=… or ?token=…) is useless without it and must never
// reach a client: the client gets the task's owner-only content endpoint (ContentURL) instead,
// as for any result that needs the credential (adaptor.State.Credentialed), and the gateway
// fetches the URL when the owner asks for the video. Such a last frame is left out of the answer
// (there is no owner-only endpoint for it).

// withoutCredentialedResults is an adaptor's state whose result URLs carry none of secrets: a
// video URL that does is marked Credentialed (answered as ContentURL, fetched by openResult); a
// last frame URL that does is dropped.
func withoutCredentialedResults(st adaptor.State, secrets []string) adaptor.State {
	if st.VideoURL != "" && !st.Credentialed && carriesCredential(st.VideoURL, secrets) {
		st.Credentialed = true
	}
	if st.LastFrameURL != "" && carriesCredential(st.LastFrameURL, secrets) {
		st.LastFrameURL = ""
	}
	return st
}

// carriesCredential reports whether a URL holds one of secrets: as written, or with its percent
// escapes decoded (a query parameter's value, a path segment spelled with escapes), leniently: a
// stray % that begins no escape (which a strict decoder refuses, and a client's lenient one
// reads past) hides nothing.
func carriesCredential(rawURL string, secrets []string) bool {
	decoded := rawURL
	if strings.ContainsRune(rawURL, '%') {
		decoded = percent.Decode(rawURL)
	}
	for _, s := range secrets {
		if s != "" && (strings.Contains(rawURL, s) || decoded != rawURL && strings.Contains(decoded, s)) {
			return true
		}
	}
	return false
}

// openResult opens the video of a succeeded task whose result needs the operator's credential,
// for keeping (keep_copy.go; the content endpoint's reads go through openContent, which paces and
// shares them): the adaptor's Content
// where its protocol has one; otherwise (a protocol whose results are plain URLs) the task is
// read again, and its result URL, when it carries the credential, is fetched by the gateway
// (adaptor.Caller.Open, which dials public addresses or the upstream's own host). A result that
// carries no credential is adaptor.ErrUnsupported: the client fetches it itself. As at a poll,
// the provider's refusal of these reads (a 4xx other than 404 and 429) and an answer it cannot
// use (adaptor.Malformed) are 502 invalid_response: the gateway's request failed, not the
// client's. The provider's 429 (MiniMax's status code 1002 too) pauses the upstream's reads.
func (h *Handler) openResult(ctx context.Context, a adaptor.Adaptor, u *providers.Upstream, t storage.Task) (*http.Response, error) {
	resp, err := a.Content(ctx, h.caller(u), t.UpstreamID)
	if errors.Is(err, adaptor.ErrUnsupported) {
		var address string
		if address, err = h.locate(ctx, h.caller(u), u, a, t); err == nil {
			resp, err = h.caller(u).Open(ctx, address)
		}
	}
	if err != nil {
		pausedBy(err, u) // a 429 (MiniMax's 1002) pauses the upstream's reads, as a read's does
		return nil, resultError(err)
	}
	return resp, nil
}

// resultError maps the error of a result's lookup or opening: an answer the adaptor cannot use
// (adaptor.Malformed) and the provider's refusal of the gateway's read are 502 invalid_response
// (readRefused); the rest stays as it is.
func resultError(err error) error {
	var malformed *adaptor.Malformed
	if errors.As(err, &malformed) {
		return unusable(malformed)
	}
	return readRefused(err)
}
