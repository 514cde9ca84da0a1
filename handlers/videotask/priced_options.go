package videotask

import (
	"encoding/json"

	"github.com/mediagw/mediagw/handlers/billing"
)

// pricedOptions copies the options a task's price depends on from the checked create fields
// (checkOptions has validated their types and ranges; a field absent or null is left at its
// zero value, which billing reads as the contract's default).
func pricedOptions(t *billing.VideoTask, fields map[string]json.RawMessage) {
	if raw, ok := fields["duration"]; ok {
		if n, ok := integer(raw); ok {
			t.Duration = &n
		}
	}
	if raw, ok := fields["frames"]; ok {
		if n, ok := integer(raw); ok {
			t.Frames = n
		}
	}
	t.Resolution, _ = jsonEnum(fields["resolution"], enumResolution) // checked to be one of them
	t.Ratio, _ = jsonEnum(fields["ratio"], enumRatio)
	if raw, ok := fields["generate_audio"]; ok {
		audio := string(raw) == "true"
		t.GenerateAudio = &audio
	}
	t.Draft = string(fields["draft"]) == "true"
}
