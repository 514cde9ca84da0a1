package upstream

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// budgetProvider is a provider at srv with one upstream, its key k.
func budgetProvider(t *testing.T, srv *httptest.Server) *providers.Provider {
	t.Helper()
	base, _ := url.Parse(srv.URL + "/v1")
	return &providers.Provider{Name: "p", BaseURL: base, APIKey: "k"}
}

// An answer is read into its budget as it comes, with or without a Content-Length: one that
// fits is held until it is released (once, however many copies release it); one that finds no
// room within its account's share is ErrBusyAnswered when successful, ErrBusy otherwise, and
// holds nothing after.
func TestAnswersAreReadIntoTheBudget(t *testing.T) {
	long := []byte(`{"data":"` + strings.Repeat("A", 3<<20) + `"}`)
	for _, declared := range []bool{true, false} {
		for _, status := range []int{http.StatusOK, http.StatusBadRequest} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if declared {
					w.Header().Set("Content-Length", strconv.Itoa(len(long)))
				}
				w.WriteHeader(status)
				w.Write(long)
			}))
			p := budgetProvider(t, srv)
			name := "declared " + strconv.FormatBool(declared) + ", status " + strconv.Itoa(status)

			budget := NewAnswerBudget(8<<20, 8<<20)
			c := Client{HTTP: NewHTTPClient(ClientOptions{}), Logger: zap.NewNop(), MaxAnswer: 16 << 20, Budget: budget}
			ans, err := c.Call(context.Background(), p, http.MethodGet, "x", nil)
			if err != nil || !bytes.Equal(ans.Body, long) {
				t.Fatalf("%s: a call with room = %v", name, err)
			}
			if held := budget.Held(); held < int64(len(long)) || held > 2*int64(len(long)) {
				t.Fatalf("%s: an answer of %d bytes holds %d", name, len(long), held)
			}
			copied := ans
			ans.Release()
			copied.Release()
			if held := budget.Held(); held != 0 {
				t.Fatalf("%s: %d bytes held after release (twice)", name, held)
			}

			// Within the account's share, but another account's answers fill the budget.
			tight := NewAnswerBudget(4<<20, 4<<20)
			other, _ := tight.Reserve("other", 2<<20)
			c.Budget = tight
			_, err = c.Call(context.Background(), p, http.MethodGet, "x", nil)
			want := ErrBusy
			if status == http.StatusOK {
				want = ErrBusyAnswered
			}
			if !errors.Is(err, want) || tight.Held() != 2<<20 {
				t.Fatalf("%s: a call past the budget = %v, %d bytes held; want %v and only the other's", name, err, tight.Held(), want)
			}
			other.Release()
			srv.Close()
		}
	}
}

// A reservation (Client.Hold) is read into before more is taken, and is the caller's to
// release: an answer within it takes nothing more, and its Release leaves the reservation
// alone.
func TestAnswersAreReadIntoTheReservation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":"` + strings.Repeat("A", 100<<10) + `"}`))
	}))
	defer srv.Close()
	budget := NewAnswerBudget(1<<20, 1<<20)
	room, ok := budget.Reserve("acct", 512<<10)
	if !ok {
		t.Fatal("no room for a reservation in an empty budget")
	}
	if _, ok := budget.Reserve("acct", 768<<10); ok || budget.Held() != 512<<10 {
		t.Fatalf("a second reservation past the budget was made, or the first changed: %d held", budget.Held())
	}
	c := Client{HTTP: NewHTTPClient(ClientOptions{}), Logger: zap.NewNop(), Budget: budget, Hold: room}
	ans, err := c.Call(context.Background(), budgetProvider(t, srv), http.MethodGet, "x", nil)
	if err != nil || budget.Held() != 512<<10 {
		t.Fatalf("an answer within its reservation = %v, %d held; want %d", err, budget.Held(), 512<<10)
	}
	ans.Release()
	if budget.Held() != 512<<10 {
		t.Fatalf("the answer's release gave back its reservation: %d held", budget.Held())
	}
	room.Release()
	if budget.Held() != 0 {
		t.Fatalf("%d held after the reservation's release", budget.Held())
	}
}

// A create that moves on from an upstream's 429 gives that refusal's bytes back: only the
// answer returned holds any.
func TestCreateReleasesTheAnswersItPassesOver(t *testing.T) {
	refusal := `{"error":{"message":"` + strings.Repeat("slow down ", 20000) + `"}}`
	refused := 0
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refused++
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(refusal))
	}))
	defer busy.Close()
	fine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"id":"t1"}`)) }))
	defer fine.Close()
	p := failoverProvider(t, busy, fine)
	budget := NewAnswerBudget(1<<20, 1<<20)
	c := Client{HTTP: NewHTTPClient(ClientOptions{}), Logger: zap.NewNop(), Budget: budget}
	ans, u, err := c.Create(context.Background(), "acct", p, "x", []byte(`{}`))
	if err != nil || u.Name != "b" || refused != 1 {
		t.Fatalf("Create = %v on %v after %d refusals, want b's answer after a's refusal", err, u.Label(), refused)
	}
	if held := budget.Held(); held > 4<<10 {
		t.Fatalf("after a create that passed over a %d-byte refusal, %d bytes are held", len(refusal), held)
	}
	ans.Release()
	if budget.Held() != 0 {
		t.Fatalf("%d bytes held after release", budget.Held())
	}
}

// failoverProvider is a provider whose upstream a (at busy) is tried before b (at fine).
func failoverProvider(t *testing.T, busy, fine *httptest.Server) *providers.Provider {
	t.Helper()
	busyURL, _ := url.Parse(busy.URL + "/v1")
	fineURL, _ := url.Parse(fine.URL + "/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", Models: []string{"m"}, Upstreams: []*providers.Upstream{
		{Name: "a", BaseURL: busyURL, APIKey: "k", Priority: 1}, {Name: "b", BaseURL: fineURL, APIKey: "k", Priority: 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.Provider("p")
	return p
}

// Concurrent answers never hold more than the budget, whatever their interleaving, and all of
// it comes back.
func TestBudgetHoldsUnderConcurrency(t *testing.T) {
	budget := NewAnswerBudget(1<<20, 1<<20)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for range 32 {
		wg.Go(func() {
			for range 200 {
				h, ok := budget.Reserve("acct", 64<<10)
				if held := budget.Held(); held > budget.Limit() {
					t.Errorf("%d held past the budget of %d", held, budget.Limit())
				}
				mu.Lock()
				peak = max(peak, budget.Held())
				mu.Unlock()
				if ok {
					h.growTo(200 << 10)
					time.Sleep(time.Microsecond)
					h.Release()
				}
			}
		})
	}
	wg.Wait()
	if budget.Held() != 0 || peak > budget.Limit() {
		t.Fatalf("held %d after all releases, peak %d of %d", budget.Held(), peak, budget.Limit())
	}
}

// A copy that takes an answer's place (Answer.Replace) takes from its budget only the bytes it
// adds past the answer's body, while there is room, and they go back with the answer; a copy no
// longer than the body takes nothing.
func TestAnswerCopiesAreTakenFromTheBudget(t *testing.T) {
	body := []byte(`{"data":"` + strings.Repeat("A", 300<<10) + `"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	budget := NewAnswerBudget(1<<20, 1<<20)
	c := Client{HTTP: NewHTTPClient(ClientOptions{}), Logger: zap.NewNop(), Budget: budget}
	ans, err := c.Call(context.Background(), budgetProvider(t, srv), http.MethodGet, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	read := budget.Held()
	if !ans.Replace(bytes.Clone(body[:len(body)-10])) || budget.Held() != read {
		t.Fatalf("a shorter copy: %d held after, %d before", budget.Held(), read)
	}
	longer := append(bytes.Clone(ans.Body), strings.Repeat(" ", 100<<10)...)
	if !ans.Replace(longer) || budget.Held() != read+int64(len(longer)-len(body)+10) {
		t.Fatalf("a longer copy with room: %d held after, %d before", budget.Held(), read)
	}
	held := budget.Held()
	if ans.Replace(make([]byte, 2<<20)) || budget.Held() != held || len(ans.Body) != len(longer) {
		t.Fatalf("a copy past the budget was taken: %d held", budget.Held())
	}
	ans.Release()
	if budget.Held() != 0 || ans.Replace(make([]byte, 2<<20)) {
		t.Fatalf("%d held after the answer's release, or a released answer took more", budget.Held())
	}
	if free := (Answer{}); !free.Replace(make([]byte, 1<<20)) {
		t.Fatal("an answer read without a budget has no room")
	}
}

// An answer reserved with ReserveWaiting that outgrows its reservation while the budget is full
// waits for room (another answer given back) and takes it; past its patience it gives up, and
// the reservation itself never waits.
func TestReserveWaitingWaitsForRoom(t *testing.T) {
	budget := NewAnswerBudget(1<<20, 1<<20)
	other, _ := budget.Reserve("acct", 1<<20-1<<10)
	room, ok := budget.ReserveWaiting("acct", 1<<10, time.Second)
	if !ok {
		t.Fatal("a reservation with room refused")
	}
	if _, ok := budget.ReserveWaiting("acct", 1, time.Minute); ok {
		t.Fatal("a reservation in a full budget was granted")
	}
	time.AfterFunc(100*time.Millisecond, other.Release)
	start := time.Now()
	if !room.growTo(512 << 10) {
		t.Fatal("an answer that waited for room given back found none")
	}
	if waited := time.Since(start); waited < 90*time.Millisecond {
		t.Fatalf("took room after %v, before any was given back", waited)
	}
	start = time.Now()
	if room.growTo(2<<20) || time.Since(start) > 5*time.Second || budget.Held() != 512<<10 {
		t.Fatalf("past its patience: took room, or waited %v, %d held", time.Since(start), budget.Held())
	}
	room.Release()
	if budget.Held() != 0 {
		t.Fatalf("%d held after release", budget.Held())
	}
}
