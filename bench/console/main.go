// Command console measures how long each page of the console takes to serve from a Badger store
// that holds -tasks video tasks and -keys API keys: it fills a store directly (as a long-running
// gateway would have), then serves every page -runs times in-process (the console's handler,
// without the network) as an operator and as a member, and prints each page's median and
// slowest time. The target is 300 ms a page (issue #26).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"

	"github.com/mediagw/mediagw/bench/mainenv"
	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/console"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/storage"
)

func main() {
	tasks := flag.Int("tasks", 100_000, "video tasks in the store")
	keys := flag.Int("keys", 1_000, "API keys in the store")
	accounts := flag.Int("accounts", 100, "accounts the keys and the other tasks belong to")
	big := flag.Float64("big", 0.9, "share of the tasks that belong to the one big account, acme")
	runs := flag.Int("runs", 20, "times each page is served")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the page loads to this file")
	flag.Parse()

	env := mainenv.New("console-bench-")
	defer env.Close()
	store := env.Badger()
	meter := accounting.NewMeter(store, time.Second, zap.NewNop())
	defer meter.Close()
	admin := &keyadmin.Handler{Store: store, Meter: meter}
	ctx := context.Background()
	now := time.Now()

	start := time.Now()
	account := func(i int) string {
		if i == 0 {
			return "acme"
		}
		return fmt.Sprintf("account-%03d", i)
	}
	parallel(*keys, func(i int) {
		spec := fmt.Sprintf(`{"account":%q,"models":["sim-*"]}`, account(i%*accounts))
		if _, err := admin.CreateKey(ctx, []byte(spec)); err != nil {
			log.Fatal(err)
		}
	})
	bigTasks := int(float64(*tasks) * *big)
	var lastID atomic.Value
	parallel(*tasks, func(i int) {
		t := storage.Task{ID: fmt.Sprintf("cgt-bench-%07d", i), Kind: storage.KindVideo, Account: "acme", KeyID: "k",
			Provider: "sim", Model: "sim-video", Status: "succeeded", CreatedAt: now.Add(-time.Duration(*tasks-i) * time.Second).Unix(),
			Finished: true, Result: []byte(`{"status":"succeeded","content":{"video_url":"https://cdn.example/v.mp4"}}`)}
		t.UpdatedAt = t.CreatedAt + 30
		if i >= bigTasks {
			t.Account = account(1 + i%(*accounts-1))
		}
		switch {
		case i%100 == 0:
			t.Status = "failed"
		case i%10_000 == 7:
			t.Model = "sim-rare"
		}
		if _, err := store.CreateTask(ctx, t); err != nil {
			log.Fatal(err)
		}
		if t.Account == "acme" {
			lastID.Store(t.ID)
		}
	})
	// The measured task has a settled hold and callback records; 2000 credits follow its hold
	// in the ledger, which the task page reads back through to find the hold's entries.
	taskID := lastID.Load().(string)
	hold, _, err := store.Hold(ctx, storage.Hold{ID: "hold-bench", Account: "acme", Amount: 2_000_000, Deadline: now.Add(time.Hour)}, now.Add(-2*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := store.Settle(ctx, hold.ID, 1_500_000, now.Add(-2*time.Hour)); err != nil {
		log.Fatal(err)
	}
	if _, err := storage.UpdateTask(ctx, store, taskID, func(t *storage.Task) error { t.HoldID = hold.ID; return nil }); err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		d := storage.Delivery{TaskID: taskID, EventID: "msg_bench", Status: "succeeded", Attempt: i + 1, At: now.UnixNano(), Outcome: "retry", HTTPStatus: 503}
		if err := store.RecordDelivery(ctx, d, time.Hour); err != nil {
			log.Fatal(err)
		}
	}
	for i := range 2_000 {
		if _, err := store.Credit(ctx, storage.Credit{Account: "acme", Amount: 1_000_000, Note: "bench", IdempotencyKey: fmt.Sprint("bench-", i)}, now); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("filled %d tasks, %d keys, 2000 ledger entries in %v\n", *tasks, *keys, time.Since(start).Round(time.Millisecond))

	hash, err := bcrypt.GenerateFromPassword([]byte("bench"), bcrypt.MinCost)
	if err != nil {
		log.Fatal(err)
	}
	prices, err := billing.NewTable("USD", []billing.Price{{Model: "sim-video", Second: 50_000}})
	if err != nil {
		log.Fatal(err)
	}
	h := &console.Handler{Store: store, Keys: admin, Prices: prices,
		Users:  map[string]console.User{"admin": {Name: "admin", PasswordHash: hash}, "alice": {Name: "alice", PasswordHash: hash, Account: "acme"}},
		Models: func() []string { return []string{"sim-video", "sim-rare"} }}
	if err := h.Provision(); err != nil {
		log.Fatal(err)
	}
	// Cursors into the middle of the key list, for its next and previous pages.
	mid, err := admin.KeysPage(ctx, storage.DirectoryPage{Limit: *keys / 2})
	if err != nil || len(mid.Keys) == 0 {
		log.Fatalf("reading the keys: %v", err)
	}
	midKey := mid.Keys[len(mid.Keys)-1].ID
	pages := []string{"/", "/accounts", "/accounts?after=account-050", "/accounts?before=account-050", "/accounts/acme",
		"/keys", "/keys?after=" + midKey, "/keys?before=" + midKey, "/keys?account=acme", "/keys?account=acme&after=" + midKey,
		"/tasks?account=acme", "/tasks?account=acme&status=failed", "/tasks?account=acme&model=sim-rare", "/tasks?account=account-050",
		"/tasks", "/tasks?status=failed", "/tasks?model=sim-rare", "/tasks?from=" + now.AddDate(0, 0, -1).UTC().Format(time.DateOnly),
		"/tasks/" + taskID, "/prices", "/playground"}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("%-48s %-8s %10s %10s\n", "page", "user", "median", "slowest")
	for _, user := range []string{"admin", "alice"} {
		cookie := login(h, user)
		for _, p := range pages {
			times := make([]time.Duration, 0, *runs)
			status := 0
			for range *runs + 1 { // the first run warms up and is not counted
				t0 := time.Now()
				status = serve(h, p, cookie)
				times = append(times, time.Since(t0))
			}
			times = times[1:]
			slices.Sort(times)
			fmt.Printf("%-48s %-8s %10v %10v  (%d)\n", trim(p), user, times[len(times)/2].Round(10*time.Microsecond), times[len(times)-1].Round(10*time.Microsecond), status)
		}
	}
}

// parallel runs fn(0) … fn(n-1) on 64 goroutines (the store shares one disk sync among them).
func parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// csrfField is the login form's token.
var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs user in as the login page does: it gets the page, for its pre-session cookie and
// the token its form carries, and posts the form with them.
func login(h *console.Handler, user string) string {
	g := httptest.NewRecorder()
	h.ServeHTTP(g, httptest.NewRequest(http.MethodGet, "/login", nil))
	m := csrfField.FindStringSubmatch(g.Body.String())
	cookies := g.Result().Cookies()
	if m == nil || len(cookies) == 0 {
		log.Fatalf("the login page has no token: %d", g.Code)
	}
	form := url.Values{"username": {user}, "password": {"bench"}, "csrf": {m[1]}}
	r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(cookies[0])
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	for _, c := range w.Result().Cookies() {
		if c.Name == "__Host-mediagw_console" {
			return c.Name + "=" + c.Value
		}
	}
	log.Fatalf("login of %s = %d", user, w.Code)
	return ""
}

func serve(h *console.Handler, target, cookie string) int {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Header.Set("Cookie", cookie)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if _, err := io.Copy(io.Discard, w.Result().Body); err != nil {
		log.Fatal(err)
	}
	return w.Code
}

func trim(p string) string {
	if len(p) > 48 {
		return p[:45] + "..."
	}
	return p
}
