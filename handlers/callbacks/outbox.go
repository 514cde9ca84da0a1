package callbacks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/storage"
)

// DefaultSchedule is the wait before each retry: 10 retries over about 24 hours.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour,
}

// Outbox defaults.
const (
	DefaultAttemptTimeout = 10 * time.Second
	DefaultConcurrency    = 8
	DefaultPerHost        = 2
	maxResponseRead       = 64 << 10
	// lookahead is how many due events a claim takes beyond the free delivery slots, so that
	// events of other receivers are found behind those of a saturated one.
	lookahead = 32
	// busyBackoff is how long an event waits when its receiver host or account is saturated.
	busyBackoff = time.Second
	// maxIdle bounds a sleep of the delivery loop (new events wake it at once).
	maxIdle = time.Minute
	// pendingCountEvery bounds how often the pending events are counted for the metric.
	pendingCountEvery = time.Second
)

// Event is one callback delivery, kept in the store until it is delivered or given up.
type Event = storage.Event

// EventID is the id of the event for a task reaching a status; the same change always gets the
// same id, so it is queued once however many times it is observed.
func EventID(taskID, status string) string {
	sum := sha256.Sum256([]byte(taskID + "\x00" + status))
	return "msg_" + hex.EncodeToString(sum[:12])
}

// Outbox keeps callback events in the store and delivers them: at least once, signed, with
// retries on the Schedule. A 2xx answer means delivered; 410 stops deliveries for that task
// (OnGone is called); anything else is retried, after Retry-After if the receiver sent one.
//
// Due events are claimed from the store's due-time index with a lease, so several outboxes (the
// old and the new config during a reload, or several gateways on one store) never deliver one
// event at once, and an idle outbox with many pending events costs nothing until one is due.
// Deliveries are bounded in all, per receiver host and per account, so that one slow or silent
// receiver, or one account with many events, cannot hold up the others: events beyond a bound
// are handed back to come round again a moment later, behind the others that are due.
type Outbox struct {
	Store storage.Store
	// Key is the gateway's webhook key; each account signs with AccountSecret(Key, account).
	Key []byte
	// Client delivers; see NewClient.
	Client *http.Client
	// AllowPrivate is NewClient's allowPrivate: when false, CheckTarget refuses a receiver URL
	// whose host is plainly not public.
	AllowPrivate bool
	// Schedule is the wait before each retry. Default: DefaultSchedule.
	Schedule []time.Duration
	// Concurrency bounds simultaneous deliveries. Default: 8.
	Concurrency int
	// PerHost bounds simultaneous deliveries to one receiver host. Default: 2.
	PerHost int
	// PerAccount bounds simultaneous deliveries of one account. Default: half of Concurrency.
	PerAccount int
	// AttemptTimeout bounds one delivery attempt; a claimed event is withheld from other
	// outboxes for three of them (its lease). Default: 10s.
	AttemptTimeout time.Duration
	// OnGone is told of a task whose receiver answered 410.
	OnGone func(ctx context.Context, taskID string)
	// Stopped, when set, reports whether callbacks of a task were stopped (its receiver answered
	// 410 to an earlier event); such events are dropped without a delivery.
	Stopped func(ctx context.Context, taskID string) bool
	Logger  *zap.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// KeepDeliveries is how long the record of each delivery attempt is kept with its task
	// (storage.Deliveries). Default: storage.DefaultTaskRetention.
	KeepDeliveries time.Duration

	wake chan struct{}
	once sync.Once
}

// CheckTarget says why a client's callback URL can never be delivered to, or nil: unless private
// receivers are allowed, a host that is an IP address outside the public ranges (in any
// spelling) or a local name (localhost, *.local, a name without a dot …). A public name that
// resolves to a private address is refused when dialling.
func (o *Outbox) CheckTarget(raw string) error {
	if o.AllowPrivate {
		return nil
	}
	return media.CheckPublicHost(raw)
}

// NewClient is the HTTP client for deliveries: no proxies, no redirects, a 10 s limit per
// attempt, and (unless allowPrivate) only public addresses, checked when dialling.
func NewClient(allowPrivate bool) *http.Client {
	return NewClientTimeout(allowPrivate, DefaultAttemptTimeout)
}

// NewClientTimeout is NewClient with another limit per attempt (give the Outbox the same
// AttemptTimeout).
func NewClientTimeout(allowPrivate bool, attempt time.Duration) *http.Client {
	return &http.Client{
		Timeout: attempt,
		Transport: &http.Transport{
			DialContext:           Dialer(allowPrivate),
			Proxy:                 nil,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			TLSHandshakeTimeout:   min(5*time.Second, attempt),
			ResponseHeaderTimeout: attempt,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (o *Outbox) init() {
	o.once.Do(func() {
		o.wake = make(chan struct{}, 1)
		if o.Now == nil {
			o.Now = time.Now
		}
		if o.Concurrency <= 0 {
			o.Concurrency = DefaultConcurrency
		}
		if o.PerHost <= 0 {
			o.PerHost = DefaultPerHost
		}
		if o.PerAccount <= 0 {
			o.PerAccount = max(o.Concurrency/2, 1)
		}
		if o.AttemptTimeout <= 0 {
			o.AttemptTimeout = DefaultAttemptTimeout
		}
		if o.Logger == nil {
			o.Logger = zap.NewNop()
		}
	})
}

// lease is how long a claimed event is withheld from other workers: an attempt, with room.
func (o *Outbox) lease() time.Duration { return 3 * o.AttemptTimeout }

// Enqueue stores an event for delivery now. An event with the same id that is still pending is
// not queued twice.
func (o *Outbox) Enqueue(ctx context.Context, ev Event) error {
	o.init()
	t := o.Now()
	ev.CreatedAt, ev.DueAt, ev.Claim = t.UnixNano(), t.UnixNano(), ""
	if u, err := url.Parse(ev.URL); err == nil {
		ev.Host = strings.ToLower(u.Host)
	}
	if _, err := o.Store.EnqueueEvent(ctx, ev); err != nil {
		return err
	}
	o.poke()
	return nil
}

func (o *Outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Run delivers due events until stop is closed. Pending events survive restarts: they are in
// the store.
func (o *Outbox) Run(stop <-chan struct{}) {
	o.init()
	// Stopping cancels deliveries under way; they are not counted as attempts, and the next
	// outbox (after a reload or restart) sends them again with the same webhook-id.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	d := &dispatch{o: o, hosts: map[string]int{}, accounts: map[string]int{}}
	defer d.wg.Wait()
	var counted time.Time
	for ctx.Err() == nil {
		started := d.round(ctx)
		if started > 0 {
			continue
		}
		var fresh bool
		counted, fresh = o.countPending(ctx, counted)
		wait := maxIdle
		if due, ok, err := o.Store.NextEventDue(ctx); err != nil {
			o.Logger.Error("reading the callback outbox", zap.Error(err))
			wait = time.Second
		} else if ok {
			wait = min(max(due.Sub(o.Now()), 10*time.Millisecond), maxIdle)
		}
		if !fresh { // come back to count: the last delivery may have emptied the outbox
			wait = min(wait, pendingCountEvery)
		}
		timer := time.NewTimer(wait)
		select {
		case <-stop:
		case <-o.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// countPending sets mediagw_callback_outbox_pending, at most once per pendingCountEvery; it
// returns when it last counted, and whether it counted now (false: the gauge may be stale).
func (o *Outbox) countPending(ctx context.Context, last time.Time) (time.Time, bool) {
	t := o.Now()
	if t.Sub(last) < pendingCountEvery {
		return last, false
	}
	n, err := o.Store.PendingEvents(ctx)
	if err != nil {
		return last, false
	}
	metrics.SetOutboxPending(n)
	return t, true
}

// dispatch is the state of one Run: deliveries under way, in all, by host and by account.
type dispatch struct {
	o        *Outbox
	mu       sync.Mutex
	running  int
	hosts    map[string]int
	accounts map[string]int
	wg       sync.WaitGroup
}

// round claims due events and starts those that fit the bounds. The others are handed back
// at once, all together: those that lacked only a free slot due when they were, those whose host
// or account is saturated a moment later (busyBackoff), so that events of other receivers and
// accounts, due behind them, are claimed next. It returns how many deliveries it started.
func (d *dispatch) round(ctx context.Context) int {
	o := d.o
	d.mu.Lock()
	free := o.Concurrency - d.running
	d.mu.Unlock()
	if free <= 0 {
		return 0
	}
	evs, err := o.Store.ClaimDueEvents(ctx, o.Now(), free+lookahead, o.lease())
	if err != nil {
		if ctx.Err() == nil {
			o.Logger.Error("claiming due callbacks", zap.Error(err))
		}
		return 0
	}
	started := 0
	var back sync.WaitGroup
	for _, ev := range evs {
		d.mu.Lock()
		fits := d.hosts[ev.Host] < o.PerHost && d.accounts[ev.Account] < o.PerAccount
		slot := d.running < o.Concurrency
		if fits && slot {
			d.running++
			d.hosts[ev.Host]++
			d.accounts[ev.Account]++
		}
		d.mu.Unlock()
		if fits && slot {
			started++
			d.wg.Add(1)
			go func() {
				defer d.done(ev)
				o.deliver(ctx, ev)
			}()
			continue
		}
		wait := time.Duration(0)
		if !fits {
			wait = busyBackoff
		}
		back.Add(1)
		go func() { defer back.Done(); o.release(ev, wait) }() // concurrent: the writes share syncs
	}
	back.Wait()
	return started
}

func (d *dispatch) done(ev Event) {
	d.mu.Lock()
	d.running--
	if d.hosts[ev.Host]--; d.hosts[ev.Host] <= 0 {
		delete(d.hosts, ev.Host)
	}
	if d.accounts[ev.Account]--; d.accounts[ev.Account] <= 0 {
		delete(d.accounts, ev.Account)
	}
	d.mu.Unlock()
	d.wg.Done()
	d.o.poke()
}

// release hands a claimed event back, due after wait, without counting an attempt.
func (o *Outbox) release(ev Event, wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev.DueAt = o.Now().Add(wait).UnixNano()
	if err := o.Store.RescheduleEvent(ctx, ev, ev.Claim); err != nil && !errors.Is(err, storage.ErrLeaseLost) {
		o.Logger.Warn("handing back a claimed callback; it is retried when its lease ends",
			zap.String("webhook_id", ev.ID), zap.Error(err))
	}
}

// deliver makes one attempt and records its outcome.
func (o *Outbox) deliver(ctx context.Context, ev Event) {
	if o.Stopped != nil && o.Stopped(ctx, ev.TaskID) {
		o.ack(context.WithoutCancel(ctx), ev)
		return
	}
	status, retryAfter, err := o.attempt(ctx, ev)
	if ctx.Err() != nil {
		o.release(ev, 0) // stopping: handed back for the next outbox, not counted as an attempt
		return
	}
	ctx = context.WithoutCancel(ctx)
	switch {
	case err == nil && status/100 == 2:
		metrics.CallbackDelivery(metrics.CallbackDelivered)
		o.recordDelivery(ctx, ev, ev.Attempts+1, metrics.CallbackDelivered, status, nil)
		o.ack(ctx, ev)
	case err == nil && status == http.StatusGone:
		metrics.CallbackDelivery(metrics.CallbackGone)
		o.recordDelivery(ctx, ev, ev.Attempts+1, metrics.CallbackGone, status, nil)
		if o.ack(ctx, ev) && o.OnGone != nil {
			o.OnGone(ctx, ev.TaskID)
		}
	case errors.As(err, new(ErrNotPublic)):
		metrics.CallbackDelivery(metrics.CallbackRefused)
		o.Logger.Warn("callback refused: its address is not public", zap.String("task_id", ev.TaskID), zap.String("webhook_id", ev.ID))
		o.recordDelivery(ctx, ev, ev.Attempts+1, metrics.CallbackRefused, 0, err)
		o.ack(ctx, ev)
	default:
		o.retry(ctx, ev, status, retryAfter, err)
	}
}

// ack removes a delivered or abandoned event. It reports false when this worker's lease had run
// out (another worker may deliver the event again: delivery is at least once).
func (o *Outbox) ack(ctx context.Context, ev Event) bool {
	err := o.Store.AckEvent(ctx, ev.ID, ev.Claim)
	if errors.Is(err, storage.ErrLeaseLost) {
		o.Logger.Debug("callback lease ran out before its outcome was stored", zap.String("webhook_id", ev.ID))
		return false
	}
	if err != nil {
		o.Logger.Error("removing a delivered callback; it will be delivered again", zap.String("webhook_id", ev.ID), zap.Error(err))
		return false
	}
	return true
}

func (o *Outbox) retry(ctx context.Context, ev Event, status int, retryAfter time.Duration, err error) {
	schedule := o.Schedule
	if len(schedule) == 0 {
		schedule = DefaultSchedule
	}
	ev.Attempts++
	if ev.Attempts > len(schedule) {
		metrics.CallbackDelivery(metrics.CallbackGivenUp)
		o.recordDelivery(ctx, ev, ev.Attempts, metrics.CallbackGivenUp, status, err)
		o.Logger.Warn("callback given up after its last retry", zap.String("task_id", ev.TaskID),
			zap.String("webhook_id", ev.ID), zap.Int("attempts", ev.Attempts), zap.Int("status", status), zap.Error(upstream.WithoutURL(err)))
		o.ack(ctx, ev)
		return
	}
	metrics.CallbackDelivery(metrics.CallbackRetry)
	o.recordDelivery(ctx, ev, ev.Attempts, metrics.CallbackRetry, status, err)
	wait := max(schedule[ev.Attempts-1], min(retryAfter, 24*time.Hour))
	ev.DueAt = o.Now().Add(wait).UnixNano()
	if err := o.Store.RescheduleEvent(ctx, ev, ev.Claim); err != nil && !errors.Is(err, storage.ErrLeaseLost) {
		o.Logger.Error("storing a callback retry; it is retried when its lease ends", zap.String("webhook_id", ev.ID), zap.Error(err))
	}
}

// retryAfter reads a receiver's Retry-After, in either of its forms (RFC 9110): seconds, or an
// HTTP date, counted from the outbox's clock. 0 when absent, past or unreadable.
func (o *Outbox) retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(o.Now()), 0)
	}
	return 0
}

// attempt POSTs the event once. The callback URL is not logged: it may carry a client's token.
func (o *Outbox) attempt(ctx context.Context, ev Event) (status int, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ev.URL, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, 0, err
	}
	ts := o.Now()
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
	return resp.StatusCode, o.retryAfter(resp.Header.Get("Retry-After")), nil
}
