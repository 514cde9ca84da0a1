package videotask

import (
	"encoding/json"
	"strings"

	"github.com/mediagw/mediagw/handlers/billing"
)

// billedUsage is what a finished task's stored answer (the upstream's, in the Ark task shape)
// reports that its price depends on: Ark's usage.completion_tokens, the output's duration,
// frames per second, resolution and ratio. What it does not report stays zero, and the task's
// estimate stands in for it when the task is settled (billing.Merge). An answer that does not
// decode reports nothing.
func billedUsage(result json.RawMessage) billing.Usage {
	var answer struct {
		Usage struct {
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
		Duration        *int64 `json:"duration"`
		FramesPerSecond *int64 `json:"framespersecond"`
		Resolution      string `json:"resolution"`
		Ratio           string `json:"ratio"`
	}
	if len(result) == 0 || json.Unmarshal(result, &answer) != nil {
		return billing.Usage{}
	}
	u := billing.Usage{
		VideoTokens: max(answer.Usage.CompletionTokens, 0),
		Resolution:  strings.ToLower(answer.Resolution),
		Ratio:       answer.Ratio,
	}
	if answer.Duration != nil && *answer.Duration > 0 {
		u.VideoSeconds = *answer.Duration
	}
	if answer.FramesPerSecond != nil && *answer.FramesPerSecond > 0 {
		u.FPS = *answer.FramesPerSecond
	}
	if u.Ratio == "adaptive" {
		u.Ratio = "" // the model chose; the estimate's ratio stands
	}
	return u
}
