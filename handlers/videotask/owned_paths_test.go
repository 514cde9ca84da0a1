package videotask

import "testing"

// TestOwnedPaths: the task API and the video API take their paths spelled exactly, the
// collection and what lies below it, and no near miss.
func TestOwnedPaths(t *testing.T) {
	for _, tc := range []struct {
		path         string
		task, videos bool
	}{
		{"/api/v3/contents/generations/tasks", true, false},
		{"/api/v3/contents/generations/tasks/", true, false},
		{"/api/v3/contents/generations/tasks/cgt-1", true, false},
		{"/api/v3/contents/generations/tasks/cgt-1/content", true, false},
		{"/api/v3/contents/generations/tasks/a/b", true, false},
		{"/api/v3/contents/generations/tasksX", false, false},
		{"/API/V3/CONTENTS/GENERATIONS/TASKS", false, false},
		{"//api/v3/contents/generations/tasks", false, false},
		{"/api/v3//contents/generations/tasks", false, false},
		{"/x/api/v3/contents/generations/tasks", false, false},
		{"/v1/videos", false, true},
		{"/v1/videos/", false, true},
		{"/v1/videos/video_1/content", false, true},
		{"/v1/videosX", false, false},
		{"/V1/VIDEOS", false, false},
		{"//v1/videos", false, false},
		{"/v1//videos", false, false},
		{"/v1/video/generations", false, false},
		{"/v1/chat/completions", false, false},
	} {
		if got := OwnsTaskPath(tc.path); got != tc.task {
			t.Errorf("OwnsTaskPath(%q) = %v, want %v", tc.path, got, tc.task)
		}
		if got := OwnsVideosPath(tc.path); got != tc.videos {
			t.Errorf("OwnsVideosPath(%q) = %v, want %v", tc.path, got, tc.videos)
		}
	}
}
