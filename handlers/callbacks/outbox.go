package callbacks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/storage"
)

// DefaultSchedule is the wait before each retry: 10 retries over about 24 hours.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour,
}

const (
	recordPrefix    = "outbox/"
	attemptTimeout  = 10 * time.Second
	maxResponseRead = 64 << 10
	scanEvery       = 500 * time.Millisecond
	batch           = 256
)

// now is the clock; tests replace it.
var now = time.Now

// inflight holds the ids of events being delivered in this process, so that two outboxes (the
// old and the new config during a reload) never deliver the same event at the same time.
var inflight sync.Map

// Event is one callback delivery, kept in the store until it is delivered or given up.
type Event struct {
	// ID is the webhook-id; it stays the same across retries.
	ID        string          `json:"id"`
	TaskID    string          `json:"task_id"`
	Account   string          `json:"account"`
	URL       string          `json:"url"`
	Body      json.RawMessage `json:"body"`
	Attempts  int             `json:"attempts"`
	NextAt    int64           `json:"next_at"` // Unix nanoseconds
	CreatedAt int64           `json:"created_at"`
}

// EventID is the id of the event for a task reaching a status; the same change always gets the
// same id, so it is queued once however many times it is observed.
func EventID(taskID, status string) string {
	sum := sha256.Sum256([]byte(taskID + "\x00" + status))
	return "msg_" + hex.EncodeToString(sum[:12])
}

// Outbox keeps callback events in the store and delivers them: at least once, signed, with
// retries on the Schedule. A 2xx answer means delivered; 410 stops deliveries for that task
// (OnGone is called); anything else is retried, after Retry-After if the receiver sent one.
type Outbox struct {
	Store storage.Store
	// Key is the gateway's webhook key; each account signs with AccountSecret(Key, account).
	Key []byte
	// Client delivers; see NewClient.
	Client *http.Client
	// Schedule is the wait before each retry. Default: DefaultSchedule.
	Schedule []time.Duration
	// Concurrency bounds simultaneous deliveries. Default: 8.
	Concurrency int
	// OnGone is told of a task whose receiver answered 410.
	OnGone func(ctx context.Context, taskID string)
	Logger *zap.Logger

	wake chan struct{}
	once sync.Once
}

// NewClient is the HTTP client for deliveries: no proxies, no redirects, a 10 s limit per
// attempt, and (unless allowPrivate) only public addresses, checked when dialling.
func NewClient(allowPrivate bool) *http.Client {
	return &http.Client{
		Timeout: attemptTimeout,
		Transport: &http.Transport{
			DialContext:           Dialer(allowPrivate),
			Proxy:                 nil,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: attemptTimeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (o *Outbox) init() {
	o.once.Do(func() { o.wake = make(chan struct{}, 1) })
}

// Enqueue stores an event for delivery. An event with the same id that is still pending is
// not queued twice.
func (o *Outbox) Enqueue(ctx context.Context, ev Event) error {
	o.init()
	t := now()
	ev.CreatedAt, ev.NextAt = t.UnixNano(), t.UnixNano()
	val, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if _, _, err := o.Store.Claim(ctx, recordPrefix+ev.ID, val, 0); err != nil {
		return err
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

// Run delivers due events until stop is closed. Pending events survive restarts: they are in
// the store.
func (o *Outbox) Run(stop <-chan struct{}) {
	o.init()
	limit := o.Concurrency
	if limit <= 0 {
		limit = 8
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	defer wg.Wait()
	// Stopping cancels deliveries under way; they are not counted as attempts, and the next
	// outbox (after a reload or restart) sends them again with the same webhook-id.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	tick := time.NewTicker(scanEvery)
	defer tick.Stop()
	for {
		for _, ev := range o.due() {
			if _, busy := inflight.LoadOrStore(ev.ID, true); busy {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-stop:
				inflight.Delete(ev.ID)
				return
			}
			wg.Add(1)
			go func() {
				defer func() { inflight.Delete(ev.ID); <-sem; wg.Done() }()
				o.deliver(ctx, ev)
			}()
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		case <-o.wake:
		}
	}
}

// due lists events whose time has come, oldest first.
func (o *Outbox) due() []Event {
	var list []Event
	t, pending := now().UnixNano(), 0
	err := o.Store.ScanRecords(context.Background(), recordPrefix, func(_ string, val []byte) bool {
		pending++
		var ev Event
		if json.Unmarshal(val, &ev) == nil && ev.NextAt <= t {
			list = append(list, ev)
		}
		return len(list) < batch
	})
	if len(list) < batch {
		metrics.SetOutboxPending(pending) // the scan saw every pending event
	}
	if err != nil {
		o.Logger.Error("reading the callback outbox", zap.Error(err))
	}
	return list
}

// deliver makes one attempt and records its outcome.
func (o *Outbox) deliver(ctx context.Context, ev Event) {
	// Another worker may have finished this event since it was listed.
	if cur, err := o.Store.Record(ctx, recordPrefix+ev.ID); err != nil {
		return
	} else if json.Unmarshal(cur, &ev) != nil || ev.NextAt > now().UnixNano() {
		return
	}
	status, retryAfter, err := o.attempt(ctx, ev)
	if ctx.Err() != nil {
		return // stopping: left as it was, for the next outbox
	}
	ctx = context.WithoutCancel(ctx)
	switch {
	case err == nil && status/100 == 2:
		metrics.CallbackDelivery(metrics.CallbackDelivered)
		_ = o.Store.DeleteRecord(ctx, recordPrefix+ev.ID)
	case err == nil && status == http.StatusGone:
		metrics.CallbackDelivery(metrics.CallbackGone)
		_ = o.Store.DeleteRecord(ctx, recordPrefix+ev.ID)
		if o.OnGone != nil {
			o.OnGone(ctx, ev.TaskID)
		}
	case errors.As(err, new(ErrNotPublic)):
		metrics.CallbackDelivery(metrics.CallbackRefused)
		o.Logger.Warn("callback refused: its address is not public", zap.String("task_id", ev.TaskID), zap.String("webhook_id", ev.ID))
		_ = o.Store.DeleteRecord(ctx, recordPrefix+ev.ID)
	default:
		o.retry(ctx, ev, status, retryAfter, err)
	}
}

func (o *Outbox) retry(ctx context.Context, ev Event, status int, retryAfter time.Duration, err error) {
	schedule := o.Schedule
	if len(schedule) == 0 {
		schedule = DefaultSchedule
	}
	ev.Attempts++
	if ev.Attempts > len(schedule) {
		metrics.CallbackDelivery(metrics.CallbackGivenUp)
		o.Logger.Warn("callback given up after its last retry", zap.String("task_id", ev.TaskID),
			zap.String("webhook_id", ev.ID), zap.Int("attempts", ev.Attempts), zap.Int("status", status), zap.Error(upstream.WithoutURL(err)))
		_ = o.Store.DeleteRecord(ctx, recordPrefix+ev.ID)
		return
	}
	metrics.CallbackDelivery(metrics.CallbackRetry)
	wait := max(schedule[ev.Attempts-1], min(retryAfter, 24*time.Hour))
	ev.NextAt = now().Add(wait).UnixNano()
	val, _ := json.Marshal(ev)
	if err := o.Store.PutRecord(ctx, recordPrefix+ev.ID, val, 0); err != nil {
		o.Logger.Error("storing a callback retry", zap.String("webhook_id", ev.ID), zap.Error(err))
	}
}

// attempt POSTs the event once. The callback URL is not logged: it may carry a client's token.
func (o *Outbox) attempt(ctx context.Context, ev Event) (status int, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ev.URL, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, 0, err
	}
	ts := now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mediagw-callbacks")
	req.Header.Set("webhook-id", ev.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	key, _ := ParseSecret(AccountSecret(o.Key, ev.Account))
	req.Header.Set("webhook-signature", Sign(key, ev.ID, ts, ev.Body))
	resp, err := o.Client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return resp.StatusCode, retryAfter, nil
}
