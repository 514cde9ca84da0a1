// Package adaptortest holds what the provider adaptors' unit tests share.
package adaptortest

import (
	"context"
	"net/http"

	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// Answering is an adaptor.Caller whose every call is answered with its text as the body and
// status 200; Open finds nothing.
type Answering string

func (a Answering) Call(context.Context, string, string, []byte, http.Header) (upstream.Answer, error) {
	return upstream.Answer{Status: http.StatusOK, Body: []byte(a)}, nil
}

func (Answering) Open(context.Context, string) (*http.Response, error) {
	return nil, adaptor.ErrNotFound
}

var _ adaptor.Caller = Answering("")
