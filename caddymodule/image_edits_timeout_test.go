package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestImageEditsTimeoutBelowHoldDeadline: an upstream_timeout the edit's hold would not outlast
// (the reconciler releases a hold 10 minutes after it is taken) is refused at load; 9 minutes
// and the default pass.
func TestImageEditsTimeoutBelowHoldDeadline(t *testing.T) {
	for _, c := range []struct {
		timeout string
		ok      bool
	}{{"", true}, {"60s", true}, {"9m", true}, {"9m1s", false}, {"10m", false}, {"30m", false}} {
		block := "mediagw_image_edits {\n}"
		if c.timeout != "" {
			block = "mediagw_image_edits {\n\tupstream_timeout " + c.timeout + "\n}"
		}
		var h ImageEditsHandler
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(block)); err != nil {
			t.Fatalf("%s: %v", c.timeout, err)
		}
		err := h.Validate()
		if c.ok && err != nil {
			t.Errorf("upstream_timeout %q refused: %v", c.timeout, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "upstream_timeout")) {
			t.Errorf("upstream_timeout %q: err %v, want a refusal naming upstream_timeout", c.timeout, err)
		}
	}
	longest := ImageEditsHandler{UpstreamTimeout: caddy.Duration(MaxImageEditTimeout)}
	if longest.Validate() != nil || MaxImageEditTimeout >= 10*time.Minute {
		t.Errorf("MaxImageEditTimeout %v must pass and be below the hold deadline", MaxImageEditTimeout)
	}
}
