package videotask

import "time"

// dueTask is a task and when it is next due.
type dueTask struct {
	id  string
	due time.Time
}

// dueQueue is a min-heap of tasks by due time (the watcher's schedule). Its push and pop are
// typed, not container/heap's: the watcher pushes and pops every task it follows once per
// Interval, and heap.Push and heap.Pop would box each dueTask in an interface, an allocation
// apiece.
type dueQueue []dueTask

// Len is how many tasks are queued.
func (q dueQueue) Len() int { return len(q) }

// push queues t.
func (q *dueQueue) push(t dueTask) {
	*q = append(*q, t)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].due.Before(h[parent].due) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

// pop removes and returns the task due soonest; the queue must not be empty.
func (q *dueQueue) pop() dueTask {
	h := *q
	n := len(h) - 1
	top := h[0]
	h[0] = h[n]
	h[n] = dueTask{} // no reference to the id left behind the slice's end
	h = h[:n]
	for i := 0; ; {
		least, left, right := i, 2*i+1, 2*i+2
		if left < n && h[left].due.Before(h[least].due) {
			least = left
		}
		if right < n && h[right].due.Before(h[least].due) {
			least = right
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	*q = h
	return top
}
