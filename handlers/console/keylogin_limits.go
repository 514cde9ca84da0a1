package console

import (
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/storage"
)

// boundLimitsByLoginKey keeps the money and load limits of a key that a member who logged in
// with key creates no looser than key's own: its budget (a quota counts as a budget of that many
// units for all time), its rate and its max_active_tasks. spec holds the limits member_keys
// gives ("budget", "quota", "max_active_tasks"); a limit the login key has and spec lacks, or
// has looser, is replaced by the login key's. It returns why the spec is refused ("" when it is
// not): a budget of member_keys and one of the login key that neither bounds the other (a
// smaller amount over a shorter period, such as 1 a day against 20 a month).
func boundLimitsByLoginKey(spec map[string]any, key *keyadmin.KeyView) string {
	if login, ok := keyBudget(key.Budget, key.Quota); ok {
		asked, has := specBudget(spec)
		switch {
		case !has || budgetWithin(login, asked) && !budgetWithin(asked, login):
			delete(spec, "budget")
			delete(spec, "quota")
			if key.Quota != nil {
				spec["quota"] = *key.Quota
			} else {
				spec["budget"] = *key.Budget
			}
		case !budgetWithin(asked, login):
			return "A key you create may spend no more than the key you logged in with (" + budgetText(login) +
				"), and the budget your operator gives members' keys (" + budgetText(asked) + ") is not within it."
		}
	}
	if key.Rate != nil {
		spec["rate"] = *key.Rate // member_keys gives no rate: the login key's is the only one
	}
	if key.MaxActiveTasks != nil {
		if asked, ok := spec["max_active_tasks"].(int64); !ok || asked > *key.MaxActiveTasks {
			spec["max_active_tasks"] = *key.MaxActiveTasks
		}
	}
	return ""
}

// keyBudget is a key's budget, a quota read as a budget of that many units for all time. A
// quota past storage.MaxAmount micro-units (the admin API takes any int64 of units) is read as
// that most, the most any balance holds, so that its micro-units do not overflow into a small or
// negative amount that would bound, and replace, a tighter one.
func keyBudget(b *keyadmin.Budget, quota *int64) (keyadmin.Budget, bool) {
	switch {
	case b != nil:
		return *b, true
	case quota != nil:
		amount := billing.Money(storage.MaxAmount)
		if *quota <= storage.MaxAmount/billing.Micro {
			amount = billing.Money(*quota) * billing.Micro
		}
		return keyadmin.Budget{Amount: amount, Period: storage.BudgetTotal}, true
	}
	return keyadmin.Budget{}, false
}

// specBudget is the budget that spec gives a new key (budget, or quota), if any.
func specBudget(spec map[string]any) (keyadmin.Budget, bool) {
	b, _ := spec["budget"].(keyadmin.Budget)
	q, _ := spec["quota"].(int64)
	_, hasBudget := spec["budget"]
	_, hasQuota := spec["quota"]
	if hasBudget {
		return keyBudget(&b, nil)
	}
	if hasQuota {
		return keyBudget(nil, &q)
	}
	return keyadmin.Budget{}, false
}

// budgetWithin reports whether budget a is no looser than b: it allows no more money, over a
// period no shorter (whatever a key spends in a month it spends in every day of it, and for all
// time in every month).
func budgetWithin(a, b keyadmin.Budget) bool {
	return a.Amount <= b.Amount && periodRank(a.Period) >= periodRank(b.Period)
}

// periodRank orders budget periods from the shortest: a day, a month, all time.
func periodRank(period string) int {
	switch period {
	case storage.BudgetDay:
		return 0
	case storage.BudgetMonth:
		return 1
	}
	return 2
}

// budgetText writes a budget for a message: "0.5 a UTC day", "1000 for all time".
func budgetText(b keyadmin.Budget) string {
	switch b.Period {
	case storage.BudgetDay:
		return b.Amount.String() + " a UTC day"
	case storage.BudgetMonth:
		return b.Amount.String() + " a UTC month"
	}
	return b.Amount.String() + " for all time"
}
