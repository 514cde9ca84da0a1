package gemini

import (
	"cmp"
	"testing"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// TestValidName: only operation names of the Gemini API's form are read, so that a name cannot
// climb out of the upstream's base URL or carry a query.
func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"models/veo-3.0-generate-001/operations/abc": true,
		"operations/abc":                  true,
		"models/veo/operations/../../x":   false,
		"/models/veo/operations/abc":      false,
		"models/veo/operations/abc?key=x": false,
		"models/veo/files/abc":            false,
		"":                                false,
		"models//operations/abc":          false,
	} {
		if got := validName(name); got != want {
			t.Errorf("validName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestDurationSeconds: a Veo 3 model is asked for the nearest of the 4, 6 or 8 s it makes (the
// longer of two equally near), a Veo 2 model for the duration within its 5 to 8 s, another model
// for the duration as given; -1 and none send nothing. The usage, which the hold plans and a
// finished task is billed by, counts the length sent, and Veo's default 8 s where none is.
func TestDurationSeconds(t *testing.T) {
	for _, tc := range []struct {
		model          string
		duration, want int64
	}{
		{"veo-3.0-generate-001", 5, 6},
		{"veo-3.1-fast-generate-preview", 5, 6},
		{"models/veo-3.1-generate-preview", 3, 4},
		{"veo-3.0-generate-001", 7, 8},
		{"veo-3.0-generate-001", 15, 8},
		{"veo-3.0-generate-001", 4, 4},
		{"veo-3.0-generate-001", -1, 0},
		{"veo-2.0-generate-001", 2, 5},
		{"veo-2.0-generate-001", 7, 7},
		{"veo-2.0-generate-001", 12, 8},
		{"my-veo", 5, 5},
		{"my-veo", 0, 0},
	} {
		if got := durationSeconds(tc.model, tc.duration); got != tc.want {
			t.Errorf("durationSeconds(%q, %d) = %d, want %d", tc.model, tc.duration, got, tc.want)
		}
		billed := cmp.Or(tc.want, defaultSeconds)
		if u := usage(adaptor.Request{Model: tc.model, Duration: tc.duration}); u.VideoSeconds != billed {
			t.Errorf("usage of %q, %d s: %d s, want %d", tc.model, tc.duration, u.VideoSeconds, billed)
		}
	}
}
