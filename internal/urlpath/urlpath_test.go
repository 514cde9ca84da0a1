package urlpath

import "testing"

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/v1/videos", true},
		{"/v1/videos/", true},
		{"/v1/videos/v_1", true},
		{"/v1/videos/v_1/content", true},
		{"/v1/videos//x", true},
		{"/v1/videosX", false},
		{"/v1/videos-1", false},
		{"/V1/VIDEOS", false},
		{"/v1/Videos/v_1", false},
		{"//v1/videos", false},
		{"/v1//videos", false},
		{"/v1/video", false},
		{"/v1", false},
		{"", false},
		{"/x/v1/videos", false},
	} {
		if got := Under(tc.path, "/v1/videos"); got != tc.want {
			t.Errorf("Under(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
