package imageedit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
)

// flightProvider answers every call with a 1 MB JSON object once release is closed, and counts
// the calls; a call whose client leaves ends.
func flightProvider(t *testing.T, release chan struct{}, calls *atomic.Int64) (*providers.Provider, *upstream.AnswerBudget, upstream.Client) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write([]byte(`{"data":"` + strings.Repeat("A", 1<<20) + `"}`))
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + "/v1")
	budget := upstream.NewAnswerBudget(8<<20, 8<<20)
	return &providers.Provider{Name: "p", BaseURL: base, APIKey: "k"}, budget,
		upstream.Client{HTTP: upstream.NewHTTPClient(upstream.ClientOptions{}), Logger: zap.NewNop(), Budget: budget}
}

// Queries that join a call in flight share it and its answer, whose bytes go back to the budget
// when the last of them leaves; a query after the call ended makes a call of its own.
func TestQueriesShareTheCallInFlight(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	p, budget, client := flightProvider(t, release, &calls)
	var flights queryFlights
	do := func(ctx context.Context) (upstream.Answer, error) {
		return client.Call(ctx, p, http.MethodGet, "t", nil)
	}

	first := flights.join(t.Context(), "t1", do)
	second := flights.join(t.Context(), "t1", do)
	if first != second {
		t.Fatal("a second query of a task in flight made a call of its own")
	}
	close(release)
	<-first.done
	if first.err != nil || len(first.ans.Body) != 1<<20+11 || calls.Load() != 1 {
		t.Fatalf("the shared call = %v, %d bytes, %d calls", first.err, len(first.ans.Body), calls.Load())
	}
	flights.leave("t1", first)
	if budget.Held() == 0 {
		t.Fatal("the answer's bytes went back while a query still writes it")
	}
	flights.leave("t1", second)
	if budget.Held() != 0 {
		t.Fatalf("%d bytes held after every query left", budget.Held())
	}

	third := flights.join(t.Context(), "t1", do)
	<-third.done
	flights.leave("t1", third)
	if third == first || calls.Load() != 2 || budget.Held() != 0 {
		t.Fatalf("a query after the call ended: %d calls, %d bytes held", calls.Load(), budget.Held())
	}
}

// The call outlives the query that started it while another waits, and ends when every query
// has left; a query that arrives then makes a call of its own.
func TestSharedCallEndsWhenEveryQueryLeft(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	p, budget, client := flightProvider(t, release, &calls)
	var flights queryFlights
	ended := make(chan error, 2)
	do := func(ctx context.Context) (upstream.Answer, error) {
		ans, err := client.Call(ctx, p, http.MethodGet, "t", nil)
		ended <- ctx.Err()
		return ans, err
	}
	leader, leaderLeaves := context.WithCancel(t.Context())
	first := flights.join(leader, "t1", do)
	second := flights.join(t.Context(), "t1", do)
	leaderLeaves()
	flights.leave("t1", first)
	select {
	case err := <-ended:
		t.Fatalf("the call ended (%v) when the query that started it left, while another waits", err)
	case <-time.After(100 * time.Millisecond):
	}
	flights.leave("t1", second)
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the call ended by itself, not cancelled")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call runs on after every query left")
	}
	<-second.done
	if budget.Held() != 0 {
		t.Fatalf("%d bytes held after a cancelled call", budget.Held())
	}
	third := flights.join(t.Context(), "t1", do)
	if third == second {
		t.Fatal("a query joined a call that every query had left")
	}
	close(release)
	<-third.done
	<-ended
	flights.leave("t1", third)
	if third.err != nil || budget.Held() != 0 {
		t.Fatalf("the new call = %v, %d bytes held after", third.err, budget.Held())
	}
}

// A call that panics answers its queries with an error (a 500 for each), not a crash.
func TestSharedCallPanicIsAnError(t *testing.T) {
	var flights queryFlights
	q := flights.join(t.Context(), "t1", func(context.Context) (upstream.Answer, error) { panic("boom") })
	<-q.done
	flights.leave("t1", q)
	if q.err == nil || !strings.Contains(q.err.Error(), "boom") {
		t.Fatalf("a panicking call = %v", q.err)
	}
}
