package storage

import (
	"context"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
)

// TestBadgerRetentionAcrossDates writes task records with the store's clock at each test instant:
// a record finished at its creation (an image) and a video task that finishes two hours later
// carry the clock's FinishedAt, and each is kept for its retention from that finish. Badger drops
// entries by the real clock, so the entry's expiry is the real time plus what is left of the
// retention on the store's clock.
func TestBadgerRetentionAcrossDates(t *testing.T) {
	const retention = time.Hour
	ctx := context.Background()
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		b, err := OpenBadger(t.TempDir(), BadgerOptions{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		keptFor := func(id string, want time.Duration) {
			t.Helper()
			got, err := b.TaskExpiresAt(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Until(got) - want; d < -5*time.Second || d > 5*time.Second {
				t.Fatalf("%s is kept for %v, want %v", id, time.Until(got).Round(time.Second), want)
			}
		}
		created := at.Unix()
		image := Task{ID: "img-1", Kind: KindImage, Account: "acme", Status: "queued", CreatedAt: created, UpdatedAt: created,
			ExpiresAt: at.Add(retention).Unix()}
		if _, err := b.CreateTask(ctx, image); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Task(ctx, "img-1"); err != nil || got.FinishedAt != created || !got.Expiry().Equal(at.Add(retention)) {
			t.Fatalf("image: %+v, %v; want finished at %d", got, err, created)
		}
		keptFor("img-1", retention)

		video := image
		video.ID, video.Kind = "cgt-1", KindVideo
		if _, err := b.CreateTask(ctx, video); err != nil {
			t.Fatal(err)
		}
		keptFor("cgt-1", MaxTaskRun+retention)
		finished := clock.Advance(2 * time.Hour)
		done, err := UpdateTask(ctx, b, "cgt-1", func(t *Task) error {
			t.Status, t.Finished = "succeeded", true
			return nil
		})
		if err != nil || done.FinishedAt != finished.Unix() || !done.Expiry().Equal(finished.Add(retention)) {
			t.Fatalf("finished video: %+v, %v; want finished at %d", done, err, finished.Unix())
		}
		keptFor("cgt-1", retention)
	})
}
