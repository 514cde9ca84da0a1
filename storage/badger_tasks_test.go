package storage

import (
	"fmt"
	"math"
	"testing"
)

// TestTaskIndexKeyLayout pins the layout of a task's index keys, which the stores of earlier
// versions wrote and ListTasks and the searches read back: prefix, account, a zero byte, the
// creation time as 20 zero-padded digits, "/" and the id; and the search cursor as the part
// after the account.
func TestTaskIndexKeyLayout(t *testing.T) {
	for _, created := range []int64{0, 1, 1763800000, math.MaxInt64, -5, math.MinInt64} {
		task := Task{ID: "cgt-1/x", Account: "acct", CreatedAt: created}
		want := fmt.Sprintf("%s%s\x00%020d/%s", prefixTaskIndex, task.Account, task.CreatedAt, task.ID)
		if got := string(taskIndexKey(task)); got != want {
			t.Errorf("created %d: key %q, want %q", created, got, want)
		}
		want = fmt.Sprintf("%020d/%s", task.CreatedAt, task.ID)
		if got := taskCursor(task.CreatedAt, task.ID); got != want {
			t.Errorf("created %d: cursor %q, want %q", created, got, want)
		}
	}
	task := Task{ID: "cgt-1", Account: "acct", CreatedAt: 1763800000}
	if n := testing.AllocsPerRun(100, func() { taskIndexKey(task) }); n > 1 {
		t.Errorf("the index key took %v allocations; want one at most", n)
	}
}
