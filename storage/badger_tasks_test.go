package storage

import (
	"fmt"
	"math"
	"testing"
)

// TestTaskIndexKeyLayout pins the layout of a task's index key, which the stores of earlier
// versions wrote and ListTasks reads back: prefix, account, a zero byte, the creation time as 20
// zero-padded digits, "/" and the id.
func TestTaskIndexKeyLayout(t *testing.T) {
	for _, created := range []int64{0, 1, 1763800000, math.MaxInt64, -5} {
		task := Task{ID: "cgt-1/x", Account: "acct", CreatedAt: created}
		want := fmt.Sprintf("%s%s\x00%020d/%s", prefixTaskIndex, task.Account, task.CreatedAt, task.ID)
		if got := string(taskIndexKey(task)); got != want {
			t.Errorf("created %d: key %q, want %q", created, got, want)
		}
	}
}
