package imageedit

import "testing"

// TestServes: the handler takes the edit and the task queries' paths spelled exactly so, and no
// near miss: those go on to the handler after it.
func TestServes(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/v1/images/edits", true},
		{"/v1/images/tasks/img_1", true},
		{"/v1/images/tasks/", true},    // answered 404 not_found
		{"/v1/images/tasks/a/b", true}, // answered 404 not_found
		{"/v1/images/edits/", false},
		{"/v1/images/editsX", false},
		{"/V1/IMAGES/EDITS", false},
		{"//v1/images/edits", false},
		{"/x/v1/images/edits", false},
		{"/v1/images/tasks", false},
		{"/v1/images/tasksX/img_1", false},
		{"/v1/images/generations", false},
	} {
		if got := Serves(tc.path); got != tc.want {
			t.Errorf("Serves(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
