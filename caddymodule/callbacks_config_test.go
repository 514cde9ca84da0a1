package caddymodule

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/storage"
)

// The callbacks attempt_timeout reaches the outbox (whose lease is three of them) and its HTTP
// client; without it both keep the 10 s default.
func TestCallbackAttemptTimeout(t *testing.T) {
	for _, tc := range []struct {
		option string
		want   time.Duration
	}{
		{"", callbacks.DefaultAttemptTimeout},
		{"attempt_timeout 3s", 3 * time.Second},
	} {
		t.Run(fmt.Sprintf("%q", tc.option), func(t *testing.T) {
			withOutbox(t, "", tc.option, func(outbox *callbacks.Outbox) {
				if outbox.AttemptTimeout != tc.want || outbox.Client.Timeout != tc.want {
					t.Fatalf("attempt timeout = %v, client timeout = %v, want %v", outbox.AttemptTimeout, outbox.Client.Timeout, tc.want)
				}
			})
		})
	}
}

// The delivery records the console shows are kept as long as the tasks they belong to: the
// outbox keeps them for task_retention, and for the default retention without it.
func TestCallbackDeliveriesKeptForTaskRetention(t *testing.T) {
	for _, tc := range []struct {
		option string
		want   time.Duration
	}{
		{"", storage.DefaultTaskRetention},
		{"task_retention 72h", 72 * time.Hour},
	} {
		t.Run(fmt.Sprintf("%q", tc.option), func(t *testing.T) {
			withOutbox(t, tc.option, "", func(outbox *callbacks.Outbox) {
				if outbox.KeepDeliveries != tc.want {
					t.Fatalf("delivery records kept for %v, want %v", outbox.KeepDeliveries, tc.want)
				}
			})
		})
	}
}

// withOutbox starts Caddy with a mediagw app on a fresh badger store, with appOption in the
// mediagw block and callbacksOption in its callbacks block, and calls check with the callback
// outbox it provisioned, before stopping Caddy.
func withOutbox(t *testing.T, appOption, callbacksOption string, check func(*callbacks.Outbox)) {
	t.Helper()
	config := fmt.Sprintf(`{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		%s
		callbacks {
			allow_private
			%s
		}
	}
}
http://127.0.0.1:%d {
	respond 404
}
`, filepath.Join(t.TempDir(), "store"), appOption, callbacksOption, closedPort(t))
	_, stop := startCaddy(t, config)
	defer stop()
	app, err := caddy.ActiveContext().App("mediagw")
	if err != nil {
		t.Fatal(err)
	}
	rt := app.(*App).runtime
	if rt == nil || rt.outbox == nil {
		t.Fatal("no callback outbox was provisioned")
	}
	check(rt.outbox)
}
