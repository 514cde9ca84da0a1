// Package apierror writes mediagw's error shapes, each endpoint its own protocol's. The video task
// endpoints use the Ark-style request error {"code","message","data":null}; the messages
// protocol (/v1/messages) Anthropic's {"type":"error","error":{"type","message"}}; the
// generate-content protocol (/v1beta/models/{model}:method) Google's
// {"error":{"code","message","status"}}; every other endpoint the OpenAI shape
// {"error":{"message","type","param","code"}}. Every shape carries mediagw's machine-readable
// code. No error body is ever empty.
package apierror

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"github.com/mediagw/mediagw/internal/hdr"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Shape selects the error body format.
type Shape int

const (
	// OpenAIShape is {"error":{"message","type","param","code"}}.
	OpenAIShape Shape = iota
	// TaskShape is {"code","message","data":null} (video task endpoints).
	TaskShape
	// AnthropicShape is {"type":"error","error":{"type","message","code","param"}} (the messages
	// protocol): Anthropic's error body, with mediagw's code and param beside its type.
	AnthropicShape
	// GoogleShape is {"error":{"code","message","status","details"}} (the generate-content
	// protocol): Google's error body, whose code is the HTTP status; mediagw's code is the
	// reason of a google.rpc.ErrorInfo in details, and its param that detail's metadata.param.
	GoogleShape
)

// TaskAPIPrefix is the path prefix of the video task API, whose errors use TaskShape.
const TaskAPIPrefix = "/api/v3/"

// ShapeFor returns the error shape a request's endpoint uses: the video task API's, the messages
// protocol's (/v1/messages and below), the generate-content protocol's (a {model}:method path
// under /v1beta/models/ or /v1/models/), or else OpenAI's.
func ShapeFor(r *http.Request) Shape {
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, TaskAPIPrefix):
		return TaskShape
	case path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/"):
		return AnthropicShape
	case (strings.HasPrefix(path, "/v1beta/models/") || strings.HasPrefix(path, "/v1/models/")) &&
		strings.Contains(path[strings.LastIndexByte(path, '/')+1:], ":"):
		return GoogleShape
	}
	return OpenAIShape
}

// Error is a contract error: an HTTP status, a machine-readable code, and a message safe to show
// to the client. Param names the offending request field, if any.
type Error struct {
	Status  int
	Code    string
	Message string
	Param   string
	// RetryAfter, when positive, is sent as the Retry-After header (whole seconds, rounded up).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// New returns a contract error.
func New(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// WithRetryAfter returns a copy of e that tells the client when to retry.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	c := *e
	c.RetryAfter = d
	return &c
}

// WithParam returns a copy of e that names the offending field.
func (e *Error) WithParam(param string) *Error {
	c := *e
	c.Param = param
	return &c
}

type taskBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

type openAIBody struct {
	Error openAIError `json:"error"`
}

type openAIError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param"`
	Code    string `json:"code"`
}

// Write sends e in the given shape.
func Write(w http.ResponseWriter, shape Shape, e *Error) {
	noteErrorCode(w, e.Code)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	// The status is sent; a failed write means the client is gone and there is no one to tell.
	_ = WriteJSON(w, e.Status, bodyOf(shape, e))
}

// Encode is the body Write sends for e in the given shape, for an answer made other than through
// a ResponseWriter (a transport replacing an upstream's answer).
func Encode(shape Shape, e *Error) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)         // as WriteJSON
	_ = enc.Encode(bodyOf(shape, e)) // plain structs of strings and ints: they always encode
	return b.Bytes()
}

// bodyOf is e's body in the given shape.
func bodyOf(shape Shape, e *Error) any {
	var body any
	switch shape {
	case TaskShape:
		body = taskBody{Code: e.Code, Message: e.Message}
	case AnthropicShape:
		body = anthropicBody{Type: "error", Error: anthropicError{Type: anthropicType(e.Status), Message: e.Message, Code: e.Code, Param: e.Param}}
	case GoogleShape:
		info := googleErrorInfo{Type: googleErrorInfoType, Reason: e.Code, Domain: "mediagw"}
		if e.Param != "" {
			info.Metadata = map[string]string{"param": e.Param}
		}
		body = googleBody{googleError{Code: e.Status, Message: e.Message, Status: googleStatus(e.Status), Details: []googleErrorInfo{info}}}
	default:
		body = openAIBody{openAIError{Message: e.Message, Type: typeFor(e.Status), Param: e.Param, Code: e.Code}}
	}
	return body
}

// Internal answers 500 for an unexpected failure. The client gets an error id and no detail; the
// cause is logged under the same id.
func Internal(w http.ResponseWriter, shape Shape, logger *zap.Logger, err error) {
	id := rand.Text()[:12]
	if logger != nil {
		logger.Error("internal error", zap.String("error_id", id), zap.Error(err))
	}
	Write(w, shape, New(http.StatusInternalServerError, "internal_error", "internal error (id "+id+"); retry later"))
}

// typeFor gives the OpenAI error type for a status.
func typeFor(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusPaymentRequired:
		return "insufficient_quota"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// Respond answers err: a contract error (*Error) as it is, anything else as Internal.
func Respond(w http.ResponseWriter, shape Shape, logger *zap.Logger, err error) {
	var e *Error
	if errors.As(err, &e) {
		Write(w, shape, e)
		return
	}
	Internal(w, shape, logger, err)
}

// ErrTooLarge answers a body past its bound.
var ErrTooLarge = New(http.StatusRequestEntityTooLarge, "request_too_large", "the request body is too large")

// ErrNoBoundary answers a multipart/form-data body whose Content-Type names no boundary.
var ErrNoBoundary = New(http.StatusBadRequest, "invalid_request_body", "the multipart/form-data body is malformed: its Content-Type names no boundary").WithParam("Content-Type")

// ReadBody reads a request body of at most limit bytes: past it the error is ErrTooLarge, and a
// failed read is a 400 with the given code.
//
// A body of declared length (Content-Length, the usual case) is read into one buffer of that
// size; one that turns out longer than declared (a replaced body) is read on to its end, within
// the same bound.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64, code string) ([]byte, error) {
	// A compressed body (a Content-Encoding other than identity) is a 415 with the code, whose
	// message says so: the gateway reads a body as it was sent, and would otherwise call a gzip
	// body "not JSON", or check a plain one that an upstream honouring the header would read as
	// something else.
	if Compressed(r) {
		return nil, CompressedBody(code)
	}
	return ReadUncompressedBody(w, r, limit, code)
}

// ReadUncompressedBody is ReadBody for a caller that has refused a compressed body itself
// (Compressed, with CompressedBody's answer) before it reads: the same outcome, without looking
// at Content-Encoding again.
func ReadUncompressedBody(w http.ResponseWriter, r *http.Request, limit int64, code string) ([]byte, error) {
	if r.ContentLength > limit {
		// Declared too large: answer now, without waiting for (or asking, after Expect:
		// 100-continue, for) a body that would be refused.
		return nil, ErrTooLarge
	}
	size := int64(512)
	if r.ContentLength > 0 {
		size = r.ContentLength + 1 // and the byte that tells whether the body ends there
	}
	// io.ReadAll, into a buffer of the declared size
	body, bounded := make([]byte, 0, size), http.MaxBytesReader(w, r.Body, limit)
	for {
		n, err := bounded.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
				return nil, ErrTooLarge
			}
			return nil, New(http.StatusBadRequest, code, "the request body could not be read")
		}
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
	}
	if int64(len(body)) < r.ContentLength {
		return nil, New(http.StatusBadRequest, code, "the request body could not be read") // it ended early
	}
	return body, nil
}

// Compressed reports whether the request declares a Content-Encoding other than identity (or
// more than one).
func Compressed(r *http.Request) bool {
	coding := r.Header["Content-Encoding"]
	return len(coding) > 1 || len(coding) == 1 && !strings.EqualFold(strings.TrimSpace(coding[0]), "identity")
}

// CompressedBody is the 415 for a compressed body (see Compressed), with the endpoint's error
// code.
func CompressedBody(code string) *Error {
	return New(http.StatusUnsupportedMediaType, code, "a request body must not be compressed (Content-Encoding)").WithParam("Content-Encoding")
}

// IsJSON reports whether the request declares a JSON body: application/json whose parameters
// name no charset or UTF-8 (see UTF8Charset). Any other charset is refused with
// WrongContentType, as another type is.
func IsJSON(r *http.Request) bool {
	ct := hdr.Get(r.Header, "Content-Type")
	if ct == "application/json" {
		return true // the usual value, without parsing its (absent) parameters
	}
	mt, params, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json" && UTF8Charset(params)
}

// noteErrorCode tells the first response writer in w's chain that wants to know (the request
// observer, for mediagw_rejections_total) the code of the error being written.
func noteErrorCode(w http.ResponseWriter, code string) {
	for w != nil {
		if n, ok := w.(interface{ NoteErrorCode(string) }); ok {
			n.NoteErrorCode(code)
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}
