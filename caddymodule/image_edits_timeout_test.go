package caddymodule

import (
	"math"
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

// TestImageEditsMaxAnswer: max_answer takes a size ("100MiB"), refuses a missing, zero or
// malformed one at parse, and one below 0 or above 1 GiB (JSON) at validation.
func TestImageEditsMaxAnswer(t *testing.T) {
	var h ImageEditsHandler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("mediagw_image_edits {\n\tmax_answer 100MiB\n}")); err != nil || h.MaxAnswer != 100<<20 {
		t.Fatalf("max_answer 100MiB: %d, %v", h.MaxAnswer, err)
	}
	if err := h.Validate(); err != nil {
		t.Fatalf("max_answer 100MiB refused: %v", err)
	}
	for _, arg := range []string{"", "0", "lots", "1MiB 2MiB"} {
		var h ImageEditsHandler
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("mediagw_image_edits {\n\tmax_answer " + arg + "\n}")); err == nil {
			t.Errorf("max_answer %q accepted", arg)
		}
	}
	for _, n := range []int64{-1, 1<<30 + 1, 1 << 40, math.MaxInt64} {
		if err := (&ImageEditsHandler{MaxAnswer: n}).Validate(); err == nil || !strings.Contains(err.Error(), "max_answer") {
			t.Errorf("max_answer %d: %v, want a refusal naming max_answer", n, err)
		}
	}
	if err := (&ImageEditsHandler{MaxAnswer: 1 << 30}).Validate(); err != nil {
		t.Errorf("max_answer 1 GiB refused: %v", err)
	}
}

// TestAnswerMemoryBounds: answer_memory reads a size into the app, and the app refuses one past
// MaxAnswerMemory when the config loads.
func TestAnswerMemoryBounds(t *testing.T) {
	var a App
	if err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("mediagw {\n\tanswer_memory 512MiB\n}")); err != nil || a.AnswerMemory != 512<<20 {
		t.Fatalf("answer_memory 512MiB: %d, %v", a.AnswerMemory, err)
	}
	if err := a.Validate(); err != nil {
		t.Fatalf("answer_memory 512MiB refused: %v", err)
	}
	for _, n := range []int64{-1, MaxAnswerMemory + 1} {
		if err := (&App{AnswerMemory: n}).Validate(); err == nil || !strings.Contains(err.Error(), "answer_memory") {
			t.Errorf("answer_memory %d: %v", n, err)
		}
	}
}
