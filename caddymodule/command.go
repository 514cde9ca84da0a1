package caddymodule

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "mediagw",
		Usage: "key <create|list|show|disable|enable|revoke|usage> | account <show|disable|enable|usage|balance|credit|ledger> | upstreams | hash-password | usage [--account <name>] [--from <day>] [--to <day>] [--group-by day,account,model] [--csv] [--address <admin>] [--config <path> [--adapter <name>]]",
		Short: "Manages mediagw API keys and accounts, and shows upstream health and usage, on a running server",
		Long: `
Manages the API keys and accounts of a running mediagw gateway through its admin
API (the admin.api.mediagw routes under /mediagw/). Changes take effect at once.

  caddy mediagw key create --account acme [--models 'gpt-*,seedance-*'] [--allow-ips 10.0.0.0/8]
                           [--expires 2027-01-31T00:00:00Z] [--budget 25.50/month] [--rate 60/1m]
                           [--max-active-tasks 5]
  caddy mediagw key list
  caddy mediagw key show|disable|enable|revoke|usage <key-id>
  caddy mediagw account show|disable|enable|usage|balance <account>
  caddy mediagw account credit <account> <amount> [--note <text>] [--adjust]
  caddy mediagw account ledger <account> [--csv]
  caddy mediagw upstreams
  caddy mediagw usage [--account acme] [--from 2026-11-01] [--to 2026-11-30]
                      [--group-by day,account,model] [--csv]

"upstreams" shows each provider's upstreams: healthy, or cooling down until when,
with their recent failures (never their credentials). "usage" prints requests, tasks,
cost and tokens per account, model and day (UTC), as JSON or CSV.

"account credit" adds a decimal amount (such as 12.5) to the account's balance, once
(a retry with the same --idempotency-key credits nothing more); a negative amount
takes money away and needs --adjust. "account ledger" prints every hold, settlement,
release, credit and adjustment of the account, oldest first.

"key create" prints the new secret (mg-…). It is shown this once and never again:
store it now. No other command prints a secret.

The admin address is --address, or the one in --config, or Caddy's default
(` + caddy.DefaultAdminListen + `).`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.PersistentFlags().String("address", "", "Address of the administration API listener (if --config is not used)")
			cmd.PersistentFlags().StringP("config", "c", "", "Configuration file (if --address is not used)")
			cmd.PersistentFlags().StringP("adapter", "a", "", "Name of config adapter to apply (if --config is used)")
			cmd.AddCommand(keyCommands(), accountCommands(), usageCommand(), hashPasswordCommand(), &cobra.Command{
				Use: "upstreams", Short: "Shows every provider's upstreams and their health", Args: cobra.NoArgs,
				RunE: func(cmd *cobra.Command, _ []string) error {
					return adminCall(cmd, http.MethodGet, upstreamsPath, nil)
				},
			})
		},
	})
}

func keyCommands() *cobra.Command {
	key := &cobra.Command{Use: "key", Short: "Manages API keys"}
	create := &cobra.Command{
		Use:   "create --account <name> [flags]",
		Short: "Creates a key and prints its secret, once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			body, err := createBody(cmd)
			if err != nil {
				return err
			}
			return adminCall(cmd, http.MethodPost, "/mediagw/keys", body)
		},
	}
	f := create.Flags()
	f.String("account", "", "Account that owns the key (required)")
	f.StringSlice("models", nil, "Comma-separated model globs the key may use; leave it out for all models")
	f.StringSlice("allow-ips", nil, "Comma-separated addresses or CIDR ranges the key may be used from; leave it out for any")
	f.String("expires", "", "RFC 3339 time from which the key is refused, such as 2027-01-31T00:00:00Z; leave it out for never")
	f.String("budget", "", "Money the key may spend, as <amount>, <amount>/day or <amount>/month (UTC), such as 25.50/month; leave it out for no budget")
	f.Int64("quota", 0, "Whole units of money the key may spend for all time (an alias of --budget <n>); leave it out for no quota")
	f.String("rate", "", "Request rate limit as <requests>/<window>, such as 60/1m; leave it out for no limit")
	f.Int64("max-active-tasks", 0, "Most unfinished video tasks at once; leave it out for no limit")
	list := &cobra.Command{Use: "list [--account <name>]", Short: "Lists keys (never their secrets), every page", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if account, _ := cmd.Flags().GetString("account"); account != "" {
				q.Set("account", account)
			}
			return printList(cmd, "/mediagw/keys", q)
		}}
	list.Flags().String("account", "", "List only this account's keys")
	key.AddCommand(create,
		list,
		keyCommand("show <key-id>", "Shows a key", http.MethodGet, "", nil),
		keyCommand("disable <key-id>", "Disables a key", http.MethodPatch, "", map[string]any{"disabled": true}),
		keyCommand("enable <key-id>", "Enables a key", http.MethodPatch, "", map[string]any{"disabled": false}),
		keyCommand("revoke <key-id>", "Deletes a key", http.MethodDelete, "", nil),
		keyCommand("usage <key-id>", "Shows a key's usage", http.MethodGet, "/usage", nil),
	)
	return key
}

func keyCommand(use, short, method, suffix string, body any) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return adminCall(cmd, method, "/mediagw/keys/"+url.PathEscape(args[0])+suffix, body)
		}}
}

func accountCommands() *cobra.Command {
	acct := &cobra.Command{Use: "account", Short: "Manages accounts and their balances"}
	acct.AddCommand(accountMoneyCommands()...)
	acct.AddCommand(&cobra.Command{Use: "list", Short: "Lists every account, every page", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return printList(cmd, "/mediagw/accounts", url.Values{}) }})
	for _, c := range []struct {
		use, short, method, suffix string
		body                       any
	}{
		{"show <account>", "Shows an account", http.MethodGet, "", nil},
		{"disable <account>", "Disables an account: all its keys are refused", http.MethodPatch, "", map[string]any{"disabled": true}},
		{"enable <account>", "Enables an account", http.MethodPatch, "", map[string]any{"disabled": false}},
		{"usage <account>", "Shows an account's usage", http.MethodGet, "/usage", nil},
	} {
		acct.AddCommand(&cobra.Command{Use: c.use, Short: c.short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return adminCall(cmd, c.method, "/mediagw/accounts/"+url.PathEscape(args[0])+c.suffix, c.body)
			}})
	}
	return acct
}

// createBody turns the create flags into the admin API's body. Every flag is checked here, so a
// mistake is reported in the CLI's own words before anything is sent.
func createBody(cmd *cobra.Command) (map[string]any, error) {
	f := cmd.Flags()
	account, err := f.GetString("account")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(account) == "" {
		return nil, fmt.Errorf("--account is required: the account that owns the key, such as --account acme")
	}
	body := map[string]any{"account": account}
	if v, _ := f.GetStringSlice("models"); len(v) > 0 {
		for _, m := range v {
			if strings.TrimSpace(m) == "" {
				return nil, fmt.Errorf("--models has an empty pattern; give comma-separated globs such as 'gpt-*,seedance-*'")
			}
		}
		body["models"] = v
	}
	if v, _ := f.GetStringSlice("allow-ips"); len(v) > 0 {
		for _, a := range v {
			if _, err := auth.ParseIPRange(a); err != nil {
				return nil, fmt.Errorf("--allow-ips: %q is not an address or CIDR range such as 10.0.0.0/8 or 203.0.113.7", a)
			}
		}
		body["allow_ips"] = v
	}
	if v, _ := f.GetString("expires"); v != "" {
		if _, err := storage.ParseKeyExpiry(v); err != nil {
			return nil, fmt.Errorf("--expires: %v", err)
		}
		body["expires"] = v
	}
	if v, _ := f.GetString("budget"); v != "" {
		budget, err := parseBudgetFlag(v)
		if err != nil {
			return nil, err
		}
		body["budget"] = budget
	}
	if f.Changed("quota") {
		q, _ := f.GetInt64("quota")
		if q < 0 {
			return nil, fmt.Errorf("--quota must be 0 or more (leave it out for no quota)")
		}
		body["quota"] = q
	}
	if v, _ := f.GetString("rate"); v != "" {
		rate, err := parseRateFlag(v)
		if err != nil {
			return nil, err
		}
		body["rate"] = rate
	}
	if f.Changed("max-active-tasks") {
		n, _ := f.GetInt64("max-active-tasks")
		if n < 1 {
			return nil, fmt.Errorf("--max-active-tasks must be 1 or more (leave it out for no limit)")
		}
		body["max_active_tasks"] = n
	}
	return body, nil
}

// parseRateFlag reads --rate <requests>/<window>, such as 60/1m.
func parseRateFlag(v string) (map[string]any, error) {
	requests, window, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(strings.TrimSpace(requests))
	if !ok || err != nil || n < 1 {
		return nil, fmt.Errorf("--rate %q: give <requests>/<window> with a whole number of requests, such as 60/1m", v)
	}
	d, err := time.ParseDuration(strings.TrimSpace(window))
	if err != nil || d <= 0 {
		return nil, fmt.Errorf("--rate %q: the window %q is not a duration; write it like 1m, 30s or 1h (so 60/1m, not 60/minute)", v, window)
	}
	return map[string]any{"requests": n, "window": strings.TrimSpace(window)}, nil
}

// usageCommand prints the usage report of GET /mediagw/usage.
func usageCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "usage [--account <name>] [--from <day>] [--to <day>] [--group-by day,account,model] [--csv]",
		Short: "Prints usage (requests, tasks, cost, tokens) per account, model and day",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for _, name := range []string{"account", "from", "to", "group-by"} {
				if v, _ := cmd.Flags().GetString(name); v != "" {
					q.Set(strings.ReplaceAll(name, "-", "_"), v)
				}
			}
			if csv, _ := cmd.Flags().GetBool("csv"); csv {
				q.Set("format", "csv")
			}
			return adminCall(cmd, http.MethodGet, "/mediagw/usage?"+q.Encode(), nil)
		},
	}
	f := c.Flags()
	f.String("account", "", "Only this account")
	f.String("from", "", "First day, YYYY-MM-DD (UTC)")
	f.String("to", "", "Last day, YYYY-MM-DD (UTC)")
	f.String("group-by", "", "Dimensions kept apart: day, account, model (default all three)")
	f.Bool("csv", false, "Print CSV instead of JSON")
	return c
}

// parseBudgetFlag reads --budget: an amount of at most six decimals, above 0, optionally
// followed by /day or /month.
func parseBudgetFlag(v string) (map[string]string, error) {
	amount, period, per := strings.Cut(v, "/")
	m, err := billing.ParseEntered(amount) // as typed: "+5" is refused, as a credit's amount is
	if err != nil || m <= 0 || per && period != storage.BudgetDay && period != storage.BudgetMonth {
		return nil, fmt.Errorf("--budget: %q is not <amount>, <amount>/day or <amount>/month with an amount above 0, such as 25.50/month", v)
	}
	budget := map[string]string{"amount": m.String()}
	if period != "" {
		budget["period"] = period
	}
	return budget, nil
}
