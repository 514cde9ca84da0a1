package passthrough

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// A query answer past maxStatusAnswer (a succeeded image task with base64 images) is read as it
// passes, in writes of any size: its status ends the task and its items are what it made (at
// most what the record says its create asked for); a cut answer, or one whose status or data is
// ambiguous, ends nothing. What it holds stays bounded.
func TestObjectWatchReadsALargeAnswer(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store}
	ctx := context.Background()
	image := strings.Repeat("QUJD", 40_000)
	items := `[{"b64_json":"` + image + `"},{"b64_json":"` + image + `"},{"b64_json":"` + image + `"}]`
	answer := func(id, body string) (billing.Usage, bool) {
		t.Helper()
		ow := rt.WatchObject(httptest.NewRecorder(), Route{watched: id})
		for i := 0; i < len(body); i += 32 << 10 {
			if _, err := ow.Write([]byte(body[i:min(i+32<<10, len(body))])); err != nil {
				t.Fatal(err)
			}
		}
		if ow.body.Cap() > 2*maxStatusAnswer {
			t.Fatalf("the watch holds %d bytes", ow.body.Cap())
		}
		got, won, err := ow.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ow.Reported(got), won
	}
	for id, asked := range map[string]int64{"img_1": 0, "img_2": 2} {
		if _, err := store.CreateTask(ctx, storage.Task{ID: id, Kind: storage.KindImage, Account: "acme", KeyID: "k", Provider: "openai",
			Model: "m", Status: statusActive, Active: true, CreatedAt: time.Now().Unix(), Usage: ImageTaskAsked(asked)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, body := range []string{
		`{"id":"t","status":"succeeded","data":` + items, // cut
		`{"id":"t","status":"succeeded","data":` + items + `,"Status":"running"}`,
		`{"id":"t","status":"running","data":` + items + `,"st\u0061tus":"succeeded"}`,
		`{"id":"t","data":` + items + `,"status":"succeeded","data":[]}`,
		`{"id":"t","data":` + items + `,"status":"running"}`,
	} {
		if _, won := answer("img_1", body); won {
			t.Fatalf("answer %d (%.40s…) finished the task", i, body)
		}
	}
	for _, c := range []struct {
		id   string
		want int64
	}{{"img_1", 3}, {"img_2", 2}} {
		made, won := answer(c.id, `{"id":"t","status":"Succeeded","size":"1024x1024","quality":"low","data":`+items+`}`)
		if !won || made.Images != c.want || made.ImageSize != "1024x1024" || made.ImageQuality != "low" {
			t.Fatalf("%s: finished %v, made %+v; want %d low images at 1024x1024", c.id, won, made, c.want)
		}
	}
}
