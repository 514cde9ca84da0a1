package videotask

import "github.com/mediagw/mediagw/internal/urlpath"

// TaskAPIPath is the task API's collection path at the gateway.
const TaskAPIPath = "/api/v3/" + TasksPath

// OwnsTaskPath reports whether path is the task API's: /api/v3/contents/generations/tasks or a
// path below it (…/tasks/…), spelled exactly so. Handler answers any such path, 404 not_found in
// the task API's shape when it is no endpoint (a trailing or doubled slash, more segments); a
// handler in front of it passes every other path on (…/tasksX, /API/V3/…, //api/v3/…).
func OwnsTaskPath(path string) bool { return urlpath.Under(path, TaskAPIPath) }

// OwnsVideosPath reports whether path is the OpenAI-style video API's: /v1/videos or a path below
// it (/v1/videos/…), spelled exactly so. VideosFront answers any such path but the ones it leaves
// to pass-through, 404 not_found when it is no endpoint; a handler in front of it passes every
// other path on (/v1/videosX, /V1/VIDEOS, //v1/videos).
func OwnsVideosPath(path string) bool { return urlpath.Under(path, VideosPath) }
