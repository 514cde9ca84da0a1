package videotask

import (
	"encoding/json"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TaskUsage is the billing hook of a finished video task: what it consumed, as its provider
// reported it, for billing to settle from. ok is false while the task is unfinished or did not
// succeed.
//
// A task made through an adaptor carries its adaptor's report (storage.Task.Usage). An Ark task's
// usage is read from its answer (billedUsage). A field the provider did not report is zero
// (billing then uses its estimate's value).
func TaskUsage(t storage.Task) (u billing.Usage, ok bool) {
	if t.Status != StatusSucceeded {
		return u, false
	}
	if len(t.Usage) > 0 {
		return u, json.Unmarshal(t.Usage, &u) == nil
	}
	return billedUsage(t.Result), true
}
