package caddymodule

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/storage"
)

// accountMoneyCommands are `account credit`, `account balance` and `account ledger`.
func accountMoneyCommands() []*cobra.Command {
	credit := &cobra.Command{
		Use:   "credit <account> <amount> [--note <text>] [--adjust] [--idempotency-key <key>]",
		Short: "Adds an amount (a decimal such as 12.5) to an account's balance; --adjust for a negative one",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, key, err := creditBody(cmd, args[1])
			if err != nil {
				return err
			}
			return adminCallWith(cmd, http.MethodPost, accountPath(args[0], "/credit"), body, map[string]string{"Idempotency-Key": key})
		},
	}
	f := credit.Flags()
	f.String("note", "", "Why, kept in the ledger entry")
	f.Bool("adjust", false, "Allow a negative amount, which takes money from the balance")
	f.String("idempotency-key", "", "Makes the credit once however often it is sent: 1 to 255 printable ASCII characters (default: a new random key)")
	ledger := &cobra.Command{
		Use:   "ledger <account> [--csv]",
		Short: "Prints an account's whole ledger, oldest entry first, as JSON or CSV",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			csv, _ := cmd.Flags().GetBool("csv")
			return printLedger(cmd, args[0], csv)
		},
	}
	ledger.Flags().Bool("csv", false, "Print CSV instead of JSON")
	balance := &cobra.Command{Use: "balance <account>", Short: "Shows an account's balance and what is held", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return adminCall(cmd, http.MethodGet, accountPath(args[0], "/balance"), nil)
		}}
	return []*cobra.Command{credit, balance, ledger}
}

func accountPath(account, suffix string) string {
	return "/mediagw/accounts/" + url.PathEscape(account) + suffix
}

// creditBody checks the amount and flags of `account credit` in the CLI's own words.
func creditBody(cmd *cobra.Command, amount string) (map[string]any, string, error) {
	micros, err := money.ParseEntered(amount) // the admin API's own rule: it would refuse the rest
	if err != nil {
		return nil, "", fmt.Errorf("amount %q: give a decimal such as 12.5 or 0.000001 (at most 6 decimals, no exponent, no '+', and a '-' only before a negative amount)", amount)
	}
	adjust, _ := cmd.Flags().GetBool("adjust")
	if micros < 0 && !adjust {
		return nil, "", fmt.Errorf("amount %s is negative: it takes money from the balance; add --adjust if that is meant", amount)
	}
	note, _ := cmd.Flags().GetString("note")
	key, _ := cmd.Flags().GetString("idempotency-key")
	if key == "" {
		key = "cli-" + strings.ToLower(rand.Text())
	}
	body := map[string]any{"amount": amount, "note": note}
	if adjust {
		body["adjust"] = true
	}
	return body, key, nil
}

// printLedger reads every page of an account's ledger and prints it as one JSON document
// ({"account", "entries"}) or one CSV table.
func printLedger(cmd *cobra.Command, account string, csv bool) error {
	after := ""
	entries := []keyadmin.EntryView{}
	for page := 0; ; page++ {
		q := url.Values{"limit": {fmt.Sprint(storage.MaxLedgerPage)}}
		if after != "" {
			q.Set("after", after)
		}
		if csv {
			q.Set("format", "csv")
		}
		header, raw, err := adminFetch(cmd, http.MethodGet, accountPath(account, "/ledger?"+q.Encode()), nil, nil)
		if err != nil {
			return err
		}
		if csv {
			text := string(raw)
			if page > 0 { // the header row once
				_, text, _ = strings.Cut(text, "\n")
			}
			if _, err := fmt.Fprint(os.Stdout, text); err != nil {
				return err
			}
			after = header.Get(keyadmin.NextHeader)
		} else {
			var p keyadmin.LedgerPage
			if err := json.Unmarshal(raw, &p); err != nil {
				return fmt.Errorf("reading the admin endpoint's ledger page: %v", err)
			}
			entries = append(entries, p.Entries...)
			after = p.Next
		}
		if after == "" {
			break
		}
	}
	if csv {
		return nil
	}
	out, err := json.MarshalIndent(keyadmin.LedgerPage{Account: account, Entries: entries}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(os.Stdout, string(out))
	return err
}
