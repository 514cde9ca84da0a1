package callbacks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// TestDeliveriesAreRecordedWithTheirTask: a receiver that answers 503 once and then 204 leaves
// two records with the task (retry 503, delivered 204, attempts 1 and 2, the event's status); a
// receiver that cannot be reached leaves an error without its URL, which carries a token.
func TestDeliveriesAreRecordedWithTheirTask(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var calls atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	key, _ := ParseSecret(NewSecret())
	o := &Outbox{Store: store, Key: key, Client: NewClient(true), Schedule: []time.Duration{10 * time.Millisecond}, Logger: zap.NewNop()}
	ctx := context.Background()
	if err := o.Enqueue(ctx, Event{ID: EventID("t1", "succeeded"), TaskID: "t1", Account: "x", URL: receiver.URL, Body: []byte(`{"id":"t1","status":"succeeded"}`)}); err != nil {
		t.Fatal(err)
	}
	const unreachable = "http://127.0.0.1:1/hook?token=client-secret-token"
	if err := o.Enqueue(ctx, Event{ID: "msg_2", TaskID: "t2", Account: "x", URL: unreachable, Body: []byte(`{"status":"failed"}`)}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { o.Run(stop); close(done) }()
	records := func(task string) []storage.Delivery {
		list, err := store.TaskDeliveries(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	deadline := time.Now().Add(30 * time.Second) // a generous wait: it ends as soon as the condition holds
	for (len(records("t1")) < 2 || len(records("t2")) < 2) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	<-done
	t1 := records("t1")
	if len(t1) != 2 || t1[0].Outcome != "retry" || t1[0].HTTPStatus != 503 || t1[0].Attempt != 1 ||
		t1[1].Outcome != "delivered" || t1[1].HTTPStatus != 204 || t1[1].Attempt != 2 || t1[1].Status != "succeeded" {
		t.Fatalf("t1's records = %+v", t1)
	}
	t2 := records("t2")
	if len(t2) != 2 || t2[1].Outcome != "given_up" || t2[1].Error == "" || strings.Contains(t2[0].Error+t2[1].Error, "client-secret-token") {
		t.Fatalf("t2's records = %+v", t2)
	}
}
