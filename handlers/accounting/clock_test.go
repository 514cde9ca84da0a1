package accounting

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestRateWindowAndFinishAcrossDates runs a key's rate window and a task's finish at each test
// instant: the window straddles midnight (or the month's or year's end) and refuses the call
// over the limit until its wait has passed on the clock, and the task-finished usage record is
// dated by the clock.
func TestRateWindowAndFinishAcrossDates(t *testing.T) {
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		core, logs := observer.New(zap.InfoLevel)
		a := newAccountant(t)
		a.Now, a.Usage = clock.Now, &usage.Recorder{Logger: zap.New(core)}
		ctx := context.Background()
		id := auth.Identity{KeyID: "k", Account: "acct", Limits: storage.Limits{RateRequests: 2, RateWindow: time.Minute}}
		for range 2 {
			if err := a.Admit(ctx, id); err != nil {
				t.Fatal(err)
			}
			clock.Advance(20 * time.Second)
		}
		var e *apierror.Error
		if err := a.Admit(ctx, id); !errors.As(err, &e) || e.Status != 429 || e.RetryAfter != 20*time.Second {
			t.Fatalf("third call at %s = %v; want 429 with a wait of 20s", clock.Now().Format(time.RFC3339), err)
		}
		clock.Advance(20 * time.Second)
		if err := a.Admit(ctx, id); err != nil {
			t.Fatalf("after the wait, at %s: %v", clock.Now().Format(time.RFC3339), err)
		}

		a.Finished(ctx, storage.Task{ID: "cgt-1", Account: "acct", KeyID: "k", Model: "m", Provider: "p"}, "succeeded", billing.Usage{})
		entries := logs.FilterField(zap.String("event", usage.EventTaskFinished)).All()
		if len(entries) != 1 || !entries[0].Time.Equal(clock.Now()) {
			t.Fatalf("task-finished records %v, want one at %s", entries, clock.Now().Format(time.RFC3339))
		}
	})
}
