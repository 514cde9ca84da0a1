package gemini

import "testing"

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
