package console

import (
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/keyadmin"
)

// A key made from a key login carries limits no looser than the login key's: what member_keys
// gives stays when it is within them, the login key's replaces it when it is tighter, and a
// budget that neither bounds is refused naming the budget.
func TestKeyFromKeyLoginKeepsItsLimits(t *testing.T) {
	i64 := func(n int64) *int64 { return &n }
	day := &keyadmin.Budget{Amount: 500_000, Period: "day"}
	rate := &keyadmin.Rate{Requests: 1, Window: "1h"}
	for _, c := range []struct {
		name   string
		spec   map[string]any
		login  keyadmin.KeyView
		want   map[string]any
		refuse string
	}{
		{"no limits on the login key", map[string]any{"quota": int64(1000)}, keyadmin.KeyView{},
			map[string]any{"quota": int64(1000)}, ""},
		{"the login key's budget, rate and tasks where member_keys gives none",
			map[string]any{}, keyadmin.KeyView{Budget: day, Rate: rate, MaxActiveTasks: i64(1)},
			map[string]any{"budget": *day, "rate": *rate, "max_active_tasks": int64(1)}, ""},
		{"the fewer active tasks", map[string]any{"max_active_tasks": int64(3)}, keyadmin.KeyView{MaxActiveTasks: i64(1)},
			map[string]any{"max_active_tasks": int64(1)}, ""},
		{"member_keys' tighter quota stays", map[string]any{"quota": int64(10)},
			keyadmin.KeyView{Budget: &keyadmin.Budget{Amount: 25_000_000, Period: "month"}}, map[string]any{"quota": int64(10)}, ""},
		{"the login key's tighter quota replaces member_keys' budget",
			map[string]any{"budget": keyadmin.Budget{Amount: 25_000_000, Period: "month"}}, keyadmin.KeyView{Quota: i64(5)},
			map[string]any{"quota": int64(5)}, ""},
		{"a day's budget against a quota for all time bounds neither", map[string]any{"quota": int64(1000)},
			keyadmin.KeyView{Budget: day}, nil, "budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := boundLimitsByLoginKey(c.spec, &c.login)
			if c.want == nil {
				if !strings.Contains(msg, c.refuse) || msg == "" {
					t.Fatalf("refusal = %q, want one naming the %s", msg, c.refuse)
				}
				return
			}
			if msg != "" {
				t.Fatalf("refused: %s", msg)
			}
			if len(c.spec) != len(c.want) {
				t.Fatalf("spec = %v, want %v", c.spec, c.want)
			}
			for k, v := range c.want {
				if c.spec[k] != v {
					t.Errorf("spec[%s] = %v, want %v", k, c.spec[k], v)
				}
			}
		})
	}
}
