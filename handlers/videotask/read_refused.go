package videotask

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/upstream"
)

// readRefused is the error a client's poll gets when the provider refuses the gateway's own
// read of a task (the GET the gateway sends with the operator's credential) with a 4xx other
// than 404 (the task is gone: finished) and 429 (backed off, the stored answer served): the
// client did nothing wrong, the provider answered the gateway with something it cannot use, so
// the poll is the contract's 502 invalid_response (spec §7.1). The task is left as it is, and
// read again at the next poll or watch: a refusal may be passing, and only an answer of the
// provider's about the task finishes it. Any other error is returned as it is, but for a relay
// token its message quotes (withoutRelayTokensIn): a 5xx's message is the provider's.
func readRefused(err error) error {
	var refusal *apierror.Error
	if !errors.As(err, &refusal) || refusal.Status < 400 || refusal.Status >= 500 || refusal.Status == http.StatusTooManyRequests {
		return withoutRelayTokensIn(err)
	}
	// The provider's own code and message are not passed on: they describe the gateway's
	// request, which the client never sees.
	return apierror.New(http.StatusBadGateway, upstream.ErrUnreadable.Code, fmt.Sprintf(
		"the video generation backend refused the gateway's read of this task (HTTP %d); the task is unchanged: poll again later",
		refusal.Status))
}

// withoutRelayTokensIn is err with the callback relay tokens its message quotes redacted
// (withoutRelayTokens), when it is a contract error (a provider's refusal passed on, whose message
// is the provider's text); any other error, or one that quotes none, is returned as it is.
func withoutRelayTokensIn(err error) error {
	var e *apierror.Error
	if !errors.As(err, &e) {
		return err
	}
	message := withoutRelayTokens(e.Message)
	if message == e.Message {
		return err
	}
	redacted := *e
	redacted.Message = message
	return &redacted
}
