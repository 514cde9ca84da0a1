package simulator

import (
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
)

// TestTaskTimelineAcrossDates runs a task's timeline from each test instant, so that it crosses
// midnight (and the month's or the year's end) while running: the id and created_at are the
// clock's, and the status and updated_at follow the clock, not the real one.
func TestTaskTimelineAcrossDates(t *testing.T) {
	const tasks = "/api/v3/contents/generations/tasks"
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		s := New()
		s.Now, s.QueuedFor, s.RunningFor = clock.Now, 20*time.Second, 20*time.Second
		_, created := do(s, "POST", tasks, `{"model":"m","content":[{"type":"text","text":"x"}]}`)
		id, _ := created["id"].(string)
		if !strings.HasPrefix(id, "cgt-"+at.Format("20060102150405")+"-") {
			t.Fatalf("id %q is not dated by the clock", id)
		}
		for _, step := range []struct {
			after   time.Duration
			status  string
			updated time.Time
		}{
			{0, "queued", at},
			{29 * time.Second, "running", at.Add(20 * time.Second)},
			{12 * time.Second, "succeeded", at.Add(40 * time.Second)},
			{48 * time.Hour, "succeeded", at.Add(40 * time.Second)},
		} {
			clock.Advance(step.after)
			_, got := do(s, "GET", tasks+"/"+id, "")
			if got["status"] != step.status || got["created_at"] != float64(at.Unix()) || got["updated_at"] != float64(step.updated.Unix()) {
				t.Fatalf("at %s: %v, want %s updated at %d", clock.Now().Format(time.RFC3339), got, step.status, step.updated.Unix())
			}
		}
	})
}
