package caddymodule

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"
)

// hashPasswordCommand is `caddy mediagw hash-password`: it reads a console password from
// standard input (its first line) and prints its bcrypt hash for `mediagw_console { user … }`.
// It needs no running server.
func hashPasswordCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "hash-password",
		Short: "Prints the bcrypt hash of a console password read from standard input",
		Long: `Reads a password from the first line of standard input and prints its bcrypt hash,
for a console user: mediagw_console { user <name> <hash> }. Keep the hash out of the
Caddyfile itself: put it in an environment variable or a file and write {env.NAME} or
{file./path}.

  printf '%s\n' "$PASSWORD" | caddy mediagw hash-password`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if err != nil && line == "" {
				return errors.New("hash-password reads the password from standard input; none was given")
			}
			password := strings.TrimRight(line, "\r\n")
			if len(password) < 8 {
				return errors.New("the password must be at least 8 characters long")
			}
			if len(password) > 72 {
				return errors.New("bcrypt uses at most 72 bytes of a password; choose a shorter one")
			}
			hash, err := bcrypt.GenerateFromPassword([]byte(password), 12)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(hash))
			return err
		},
	}
}
