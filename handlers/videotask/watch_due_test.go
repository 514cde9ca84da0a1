package videotask

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The schedule pops its tasks soonest first, however they were pushed, pops interleaved.
func TestDueQueuePopsSoonestFirst(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	var q dueQueue
	var want []time.Time
	var got []time.Time
	for i := range 500 {
		due := base.Add(time.Duration(rng.IntN(200)) * time.Second) // repeated due times too
		q.push(dueTask{id: fmt.Sprint("cgt-", i), due: due})
		want = append(want, due)
		if i%7 == 6 { // pop as the watcher does between pushes
			slices.SortFunc(want, time.Time.Compare)
			top := q.pop()
			if !top.due.Equal(want[0]) {
				t.Fatalf("pop %d: due %v, want the soonest %v", len(got), top.due, want[0])
			}
			got, want = append(got, top.due), want[1:]
		}
	}
	slices.SortFunc(want, time.Time.Compare)
	for q.Len() > 0 {
		got = append(got, q.pop().due)
	}
	if len(got) != 500 {
		t.Fatalf("popped %d tasks, want 500", len(got))
	}
	if rest := got[len(got)-len(want):]; !slices.EqualFunc(rest, want, time.Time.Equal) {
		t.Fatalf("the last %d pops are not in due order", len(want))
	}
}
