package metrics

import "net/http"

// Rejection reasons, the values of mediagw_rejections_total's reason label.
const (
	ReasonQuota           = "quota"
	ReasonRate            = "rate"
	ReasonActiveTasks     = "active_tasks"
	ReasonModelNotAllowed = "model_not_allowed"
	ReasonModelNotFound   = "model_not_found"
	ReasonInvalidRequest  = "invalid_request"
	ReasonUnauthenticated = "unauthenticated"
	ReasonForbidden       = "forbidden"
	ReasonTooLarge        = "too_large"
	ReasonNotFound        = "not_found"
	ReasonConflict        = "conflict"
	ReasonUnavailable     = "unavailable"
)

// reasons are the values of mediagw_rejections_total's reason label.
var reasons = []string{ReasonQuota, ReasonRate, ReasonActiveTasks, ReasonModelNotAllowed, ReasonModelNotFound,
	ReasonInvalidRequest, ReasonUnauthenticated, ReasonForbidden, ReasonTooLarge, ReasonNotFound, ReasonConflict,
	ReasonUnavailable}

// Reason names why a request was refused, from the status and error code mediagw answered it
// with. It is "" for an answer that is not a refusal (below 400, or a server error).
func Reason(status int, code string) string {
	switch code {
	case "insufficient_quota":
		return ReasonQuota
	case "rate_limit_exceeded":
		return ReasonRate
	case "too_many_active_tasks":
		return ReasonActiveTasks
	case "model_not_allowed":
		return ReasonModelNotAllowed
	case "model_not_found":
		return ReasonModelNotFound
	case "task_not_exist", "task_not_found", "not_found":
		return ReasonNotFound
	case "idempotency_key_reused", "idempotency_in_progress", "provider_unavailable":
		return ReasonConflict
	case "upload_service_unavailable":
		return ReasonUnavailable
	}
	switch {
	case status == http.StatusUnauthorized:
		return ReasonUnauthenticated
	case status == http.StatusForbidden:
		return ReasonForbidden
	case status == http.StatusRequestEntityTooLarge:
		return ReasonTooLarge
	case status == http.StatusPaymentRequired:
		return ReasonQuota
	case status == http.StatusTooManyRequests:
		return ReasonRate
	case status >= 400 && status < 500:
		return ReasonInvalidRequest
	}
	return ""
}
