package caddymodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "mediagw",
		Usage: "key <create|list|show|disable|enable|revoke|usage> | account <show|disable|enable|usage> | usage [--account <name>] [--from <day>] [--to <day>] [--group-by day,account,model] [--csv] [--address <admin>] [--config <path> [--adapter <name>]]",
		Short: "Manages mediagw API keys and accounts on a running server",
		Long: `
Manages the API keys and accounts of a running mediagw gateway through its admin
API (the admin.api.mediagw routes under /mediagw/). Changes take effect at once.

  caddy mediagw key create --account acme [--models 'gpt-*,seedance-*'] [--allow-ips 10.0.0.0/8]
                           [--expires 2027-01-31T00:00:00Z] [--quota 1000] [--rate 60/1m]
                           [--max-active-tasks 5]
  caddy mediagw key list
  caddy mediagw key show|disable|enable|revoke|usage <key-id>
  caddy mediagw account show|disable|enable|usage <account>
  caddy mediagw usage [--account acme] [--from 2026-11-01] [--to 2026-11-30]
                      [--group-by day,account,model] [--csv]

"key create" prints the new secret (mg-…). It is shown this once and never again:
store it now. No other command prints a secret.

The admin address is --address, or the one in --config, or Caddy's default
(` + caddy.DefaultAdminListen + `).`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.PersistentFlags().String("address", "", "Address of the administration API listener (if --config is not used)")
			cmd.PersistentFlags().StringP("config", "c", "", "Configuration file (if --address is not used)")
			cmd.PersistentFlags().StringP("adapter", "a", "", "Name of config adapter to apply (if --config is used)")
			cmd.AddCommand(keyCommands(), accountCommands(), usageCommand())
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
	f.StringSlice("models", nil, "Model glob patterns the key may use (default: all)")
	f.StringSlice("allow-ips", nil, "Addresses or CIDR ranges the key may be used from (default: any)")
	f.String("expires", "", "RFC 3339 time from which the key is refused")
	f.Int64("quota", -1, "Total cost the key may consume (default: unlimited)")
	f.String("rate", "", "Request rate limit as <requests>/<window>, e.g. 60/1m")
	f.Int64("max-active-tasks", 0, "Most unfinished video tasks at once (default: no limit)")
	key.AddCommand(create,
		&cobra.Command{Use: "list", Short: "Lists keys (never their secrets)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return adminCall(cmd, http.MethodGet, "/mediagw/keys", nil)
			}},
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
	acct := &cobra.Command{Use: "account", Short: "Manages accounts"}
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

// createBody turns the create flags into the admin API's body.
func createBody(cmd *cobra.Command) (map[string]any, error) {
	f := cmd.Flags()
	account, _ := f.GetString("account")
	if account == "" {
		return nil, fmt.Errorf("--account is required")
	}
	body := map[string]any{"account": account}
	if v, _ := f.GetStringSlice("models"); len(v) > 0 {
		body["models"] = v
	}
	if v, _ := f.GetStringSlice("allow-ips"); len(v) > 0 {
		body["allow_ips"] = v
	}
	if v, _ := f.GetString("expires"); v != "" {
		body["expires"] = v
	}
	if v, _ := f.GetInt64("quota"); v >= 0 {
		body["quota"] = v
	}
	if v, _ := f.GetString("rate"); v != "" {
		requests, window, ok := strings.Cut(v, "/")
		if !ok {
			return nil, fmt.Errorf("--rate must look like 60/1m")
		}
		var n int
		if _, err := fmt.Sscan(requests, &n); err != nil {
			return nil, fmt.Errorf("--rate must look like 60/1m")
		}
		body["rate"] = map[string]any{"requests": n, "window": window}
	}
	if v, _ := f.GetInt64("max-active-tasks"); v > 0 {
		body["max_active_tasks"] = v
	}
	return body, nil
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
			var header http.Header
			if csv, _ := cmd.Flags().GetBool("csv"); csv {
				header = http.Header{"Accept": {"text/csv"}}
			}
			return adminRequest(cmd, http.MethodGet, "/mediagw/usage?"+q.Encode(), header, nil)
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

// adminCall sends one request to the admin API and prints the JSON answer.
func adminCall(cmd *cobra.Command, method, uri string, body any) error {
	return adminRequest(cmd, method, uri, nil, body)
}

// adminRequest sends one request with extra headers to the admin API and prints the answer
// (indented when it is JSON).
func adminRequest(cmd *cobra.Command, method, uri string, header http.Header, body any) error {
	addr, _ := cmd.Flags().GetString("address")
	cfg, _ := cmd.Flags().GetString("config")
	adapter, _ := cmd.Flags().GetString("adapter")
	adminAddr, err := caddycmd.DetermineAdminAPIAddress(addr, nil, cfg, adapter)
	if err != nil {
		return fmt.Errorf("finding the admin API address: %v", err)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	resp, err := caddycmd.AdminAPIRequest(adminAddr, method, uri, header, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") != nil {
		out.Write(raw)
	}
	_, err = fmt.Fprintln(os.Stdout, strings.TrimSpace(out.String()))
	return err
}
