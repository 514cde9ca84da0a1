package apierror

import "net/http"

// anthropicBody is the messages protocol's error body. Code (mediagw's machine-readable code) and
// Param (the field at fault, or empty) are members Anthropic's own errors lack; its SDKs read type
// and message.
type anthropicBody struct {
	Type  string         `json:"type"`
	Error anthropicError `json:"error"`
}

type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    string `json:"code"`
	Param   string `json:"param"`
}

// anthropicType gives the messages protocol's error type for a status, as Anthropic's API
// documents them (402 is billing_error, 413 request_too_large, 504 timeout_error).
func anthropicType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// googleBody is the generate-content protocol's error body (google.rpc.Status as JSON).
type googleBody struct {
	Error googleError `json:"error"`
}

type googleError struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status"`
	Details []googleErrorInfo `json:"details"`
}

// googleErrorInfo is a google.rpc.ErrorInfo detail: Reason is mediagw's code, and Metadata names
// the field at fault (param), when there is one.
type googleErrorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

const googleErrorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// googleStatus gives the google.rpc.Code name for a status. A 402 (the account's balance or the
// key's budget does not cover the request) is FAILED_PRECONDITION, as Google's APIs answer a
// project whose billing does not allow the call.
func googleStatus(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusPaymentRequired:
		return "FAILED_PRECONDITION"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "INVALID_ARGUMENT"
}
