package imageedit

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TestEditHoldsNImagesAndSettlesFromData: an edit of n images holds n at its size's price
// before the upstream is called, and is charged for the items in the answer's data; one whose
// hold does not fit the balance is a 402 that never reaches the upstream; a refusal is charged
// nothing; a task answer keeps the estimate held, for the task's end to settle (its record
// carries the hold), unless it shows the task ended already.
func TestEditHoldsNImagesAndSettlesFromData(t *testing.T) {
	const edit = `{"model":"m","prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}],"n":3,"size":"1536x1024"}`
	for _, tc := range []struct {
		name           string
		status         int
		answer         string
		credit         string
		wantStatus     int
		wantCalls      int64
		wantBalance    string // credited 1, less what was charged
		wantHeldDuring string
		wantHeldAfter  string // "" for nothing
	}{
		{"two of three images made", 200, `{"created":1,"data":[{"url":"https://cdn.example.com/1.png"},{"url":"https://cdn.example.com/2.png"}]}`, "1", 200, 1, "0.88", "0.18", ""},
		{"the upstream refuses", 400, `{"error":{"code":"bad","message":"no"}}`, "1", 400, 1, "1", "0.18", ""},
		{"a failure in a 200", 200, `{"error":{"code":"moderation","message":"no"}}`, "1", 200, 1, "1", "0.18", ""},
		{"an image task", 200, `{"task_id":"imgt_1"}`, "1", 200, 1, "0.82", "0.18", "0.18"},
		{"an image task failed at once", 200, `{"id":"imgt_2","status":"failed","error":{"code":"moderation","message":"no"}}`, "1", 200, 1, "1", "0.18", ""},
		{"an image task succeeded at once, its images not in the answer", 200, `{"id":"imgt_3","status":"succeeded"}`, "1", 200, 1, "0.82", "0.18", ""},
		{"the balance does not cover n images", 200, `{"data":[{"url":"https://cdn.example.com/1.png"}]}`, "0.17", 402, 0, "0.17", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openTestStore(t)
			ctx := context.Background()
			credit, _ := billing.ParseMoney(tc.credit)
			if _, err := store.Credit(ctx, storage.Credit{Account: "acme", Amount: int64(credit), IdempotencyKey: "c1"}, time.Now()); err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int64
			var heldDuring atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				// The edit's hold is transient (its request ends it): a ledger may leave it out
				// of Balance while it is open, never out of the holds in force.
				if open, err := store.OverdueHolds(r.Context(), time.Now().Add(storage.DefaultHoldDeadline+time.Hour), 10); err == nil {
					var held int64
					for _, h := range open {
						held += h.Amount
					}
					heldDuring.Store(held)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.answer)
			}))
			t.Cleanup(up.Close)
			h := billedHandler(t, store, up.URL+"/v1", "upstream-secret", []billing.Price{{Model: "m", Image: 40_000,
				ImageSizes: []billing.ImagePrice{{Size: "1536x1024", Amount: 60_000}}}})
			r := httptest.NewRequest("POST", "/v1/images/edits", strings.NewReader(edit))
			r.Header.Set("Content-Type", "application/json")
			r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme"}))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.wantStatus || calls.Load() != tc.wantCalls {
				t.Fatalf("got %d %s after %d upstream calls, want %d after %d", w.Code, w.Body, calls.Load(), tc.wantStatus, tc.wantCalls)
			}
			if tc.wantHeldDuring != "" && billing.Money(heldDuring.Load()).String() != tc.wantHeldDuring {
				t.Fatalf("held while the upstream worked: %v, want %s (3 images at 0.06)", billing.Money(heldDuring.Load()), tc.wantHeldDuring)
			}
			wantBalance(t, store, tc.wantBalance, cmp.Or(tc.wantHeldAfter, "0"))
		})
	}
}

// TestEditOfQualityAutoSettlesAtTheReportedQuality: an edit of quality auto holds its images at
// the highest band of its size, and is charged at the quality and size the answer reports (as
// gpt-image answers do), or at the hold's bound when the answer does not say.
func TestEditOfQualityAutoSettlesAtTheReportedQuality(t *testing.T) {
	const edit = `{"model":"m","prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}],"n":2,"size":"1536x1024","quality":"auto"}`
	const images = `"data":[{"url":"https://cdn.example.com/1.png"},{"url":"https://cdn.example.com/2.png"}]`
	for _, tc := range []struct {
		name, answer, wantBalance string
	}{
		{"the answer reports low", `{"created":1,` + images + `,"quality":"low","size":"1536x1024"}`, "0.96"},
		{"the answer reports another size", `{"created":1,` + images + `,"quality":"medium","size":"1024x1024"}`, "0.92"},
		{"the answer reports nothing", `{"created":1,` + images + `}`, "0.5"},
		{"the answer reports what no price names", `{"created":1,` + images + `,"quality":"auto","size":"auto"}`, "0.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, store := editPriced(t, edit, "application/json", tc.answer)
			if w.Code != 200 {
				t.Fatalf("got %d %s", w.Code, w.Body)
			}
			wantSettled(t, store, tc.wantBalance)
		})
	}
}

// TestStreamedEditSettlesFromItsEvents: an edit sent with stream: true, which the provider
// answers with OpenAI's image edit streaming events, is passed on as it came and charged for its
// image_edit.completed events at the quality they report (it asked for auto), the estimate when
// only partial images came, and nothing when no image came.
func TestStreamedEditSettlesFromItsEvents(t *testing.T) {
	const edit = `{"model":"m","prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}],"n":2,"size":"1536x1024","quality":"auto","stream":true}`
	const partial = "event: image_edit.partial_image\ndata: {\"type\":\"image_edit.partial_image\",\"b64_json\":\"UEFSVA==\",\"created_at\":1,\"size\":\"1536x1024\",\"quality\":\"auto\",\"background\":\"opaque\",\"output_format\":\"png\",\"partial_image_index\":0}\n\n"
	const completed = "event: image_edit.completed\ndata: {\"type\":\"image_edit.completed\",\"b64_json\":\"QUJD\",\"created_at\":1,\"size\":\"1536x1024\",\"quality\":\"low\",\"background\":\"opaque\",\"output_format\":\"png\",\"usage\":{\"total_tokens\":100,\"input_tokens\":50,\"output_tokens\":50,\"input_tokens_details\":{\"text_tokens\":10,\"image_tokens\":40}}}\n\n"
	const failure = "event: error\ndata: {\"error\":{\"type\":\"server_error\",\"code\":\"server_error\",\"message\":\"no\"}}\n\n"
	for _, tc := range []struct {
		name, stream, wantBalance string
	}{
		{"two completed images", partial + completed + partial + completed, "0.96"},
		{"one of two", partial + completed + failure, "0.98"},
		{"partial images only", partial + partial + failure, "0.5"},
		{"no image", failure, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, store := editPriced(t, edit, "text/event-stream", tc.stream)
			if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" || w.Body.String() != tc.stream {
				t.Fatalf("got %d %s %q, want the stream passed on", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			wantSettled(t, store, tc.wantBalance)
		})
	}
}

// editPriced sends the edit request edit for account acme, credited 1, through a handler whose
// model m is priced by the image (0.04, and 1536x1024 at 0.02 low and 0.25 high), to an upstream
// that answers body with contentType. It returns the recorded answer and the store.
func editPriced(t *testing.T, edit, contentType, body string) (*httptest.ResponseRecorder, *storage.Badger) {
	t.Helper()
	store := openTestStore(t)
	if _, err := store.Credit(context.Background(), storage.Credit{Account: "acme", Amount: billing.Micro, IdempotencyKey: "c1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	h := billedHandler(t, store, up.URL+"/v1", "upstream-secret", []billing.Price{{Model: "m", Image: 40_000, ImageSizes: []billing.ImagePrice{
		{Size: "1536x1024", Quality: "low", Amount: 20_000}, {Size: "1536x1024", Quality: "high", Amount: 250_000}}}})
	r := httptest.NewRequest("POST", "/v1/images/edits", strings.NewReader(edit))
	r.Header.Set("Content-Type", "application/json")
	r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme"}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w, store
}

// wantSettled fails t unless acme's balance is want and nothing of it is held.
func wantSettled(t *testing.T, store *storage.Badger, want string) {
	t.Helper()
	wantBalance(t, store, want, "0")
}

// wantBalance checks acme's balance and the amount its open holds keep.
func wantBalance(t *testing.T, store *storage.Badger, want, held string) {
	t.Helper()
	b, err := store.Balance(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if got := billing.Money(b.Amount).String(); got != want || billing.Money(b.Held).String() != held {
		t.Fatalf("balance %s with %v held, want %s and %s held", got, billing.Money(b.Held), want, held)
	}
}
