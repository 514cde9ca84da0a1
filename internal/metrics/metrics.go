// Package metrics holds mediagw's Prometheus collectors. They live as long as the process, like
// Caddy's own admin and config metrics, so their values survive config reloads; each config
// registers them on its registry (Register), which Caddy serves at the admin endpoint's /metrics.
//
// Handlers call the functions of this package; each is a map lookup and an atomic add. Labels
// never carry a key, a secret or a URL: endpoints are path templates, models and providers are
// the configured ones, and the account is a label of mediagw_spend_micro_units_total only, and
// only when the configuration allows it (SetAccountLabel).
package metrics

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets suit model providers: from a fast cache hit to a slow generation.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// lagBuckets suit the watcher's lateness against a refresh's due time.
var lagBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagw_requests_total",
		Help: "Requests answered by mediagw handlers, by endpoint (a path template), provider, model and HTTP status.",
	}, []string{"endpoint", "provider", "model", "code"})
	upstreamDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mediagw_upstream_request_duration_seconds",
		Help:    "Time until an upstream provider's response headers arrived.",
		Buckets: latencyBuckets,
	}, []string{"provider", "upstream", "endpoint"})
	tasksCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagw_tasks_created_total",
		Help: "Video tasks created upstream and recorded.",
	}, []string{"provider", "model"})
	tasksFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagw_tasks_finished_total",
		Help: "Video tasks first seen in a terminal status, by that status.",
	}, []string{"provider", "model", "status"})
	tasksActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mediagw_tasks_active",
		Help: "Unfinished video tasks, as counted by this process (recounted from the store when the config loads).",
	}, []string{"provider"})
	refreshLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "mediagw_task_refresh_lag_seconds",
		Help:    "How late each background refresh of an unfinished task ran against its due time.",
		Buckets: lagBuckets,
	})
	callbackDeliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagw_callback_deliveries_total",
		Help: "Callback delivery attempts by outcome: delivered, gone (410), retry, given_up, refused (address not public).",
	}, []string{"outcome"})
	outboxPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mediagw_callback_outbox_pending",
		Help: "Callback events waiting in the outbox for delivery or a retry.",
	})
	answerMemory = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mediagw_answer_memory_bytes",
		Help: "Bytes of provider answers held in memory at once, as counted against answer_memory (image edits and image task queries).",
	})
	rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagw_rejections_total",
		Help: "Requests refused by mediagw before reaching an upstream, by reason.",
	}, []string{"reason"})
	spendByAccount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagw_spend_micro_units_total",
		Help: "Money charged by settled requests and tasks, in micro-units of the gateway's currency (1000000 make one unit), by account and model.",
	}, []string{"account", "model"})
	spend = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagw_spend_micro_units_total",
		Help: "Money charged by settled requests and tasks, in micro-units of the gateway's currency (1000000 make one unit), by model.",
	}, []string{"model"})
)

// accountLabel says whether mediagw_spend_micro_units_total is counted per account.
var accountLabel atomic.Bool

func init() { accountLabel.Store(true) }

// SetAccountLabel turns the account label of mediagw_spend_micro_units_total on or off. The last
// loaded config decides.
func SetAccountLabel(on bool) { accountLabel.Store(on) }

// Register adds mediagw's collectors to a config's registry. A collector already registered
// there is reused, so a module that appears twice in one config is harmless.
func Register(reg prometheus.Registerer, withAccount bool) error {
	list := []prometheus.Collector{requests, upstreamDuration, tasksCreated, tasksFinished, tasksActive,
		refreshLag, callbackDeliveries, outboxPending, answerMemory, rejections}
	if withAccount {
		list = append(list, spendByAccount)
	} else {
		list = append(list, spend)
	}
	for _, c := range list {
		if err := reg.Register(c); err != nil {
			if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok && are.ExistingCollector == c {
				continue
			}
			return err
		}
	}
	// Series of a known, small set of label values are served at 0 before their first event.
	// Prometheus's rate() and increase() count only increments between two scrapes, so a series
	// first scraped at 1 would hide its first event: a rare given_up callback or quota refusal
	// would never show on a dashboard.
	for _, outcome := range callbackOutcomes {
		callbackDeliveries.WithLabelValues(outcome)
	}
	for _, reason := range reasons {
		rejections.WithLabelValues(reason)
	}
	return nil
}

// requestSeries caches the series of mediagw_requests_total by their labels, so that counting a
// request costs one map lookup. Its size is bounded like the labels: configured models and
// providers, endpoint templates, status codes.
var requestSeries seriesCache[requestLabels, prometheus.Counter]

type requestLabels struct {
	endpoint, provider, model string
	code                      int
}

// Request counts one answered request.
func Request(endpoint, provider, model string, code int) {
	requestSeries.get(requestLabels{endpoint, provider, model, code}, func() prometheus.Counter {
		return requests.WithLabelValues(endpoint, provider, model, strconv.Itoa(code))
	}).Inc()
}

// upstreamSeries caches the series of mediagw_upstream_request_duration_seconds, bounded by the
// configured upstreams and the endpoint templates.
var upstreamSeries seriesCache[[3]string, prometheus.Observer]

// UpstreamDuration observes the time an upstream took to answer.
func UpstreamDuration(provider, upstream, endpoint string, d time.Duration) {
	upstreamSeries.get([3]string{provider, upstream, endpoint}, func() prometheus.Observer {
		return upstreamDuration.WithLabelValues(provider, upstream, endpoint)
	}).Observe(d.Seconds())
}

// createdSeries caches the series of mediagw_tasks_created_total by (provider, model), bounded by
// the configured providers and models.
var createdSeries seriesCache[[2]string, prometheus.Counter]

// terminalStatuses are the values of mediagw_tasks_finished_total's status label.
var terminalStatuses = []string{"succeeded", "failed", "cancelled", "expired"}

// TaskCreated counts a task created upstream and recorded. The model's first task also creates
// its mediagw_tasks_finished_total series at 0, so that the first failed task (seconds later, at
// least one scrape after) counts in rate() and increase().
func TaskCreated(provider, model string) {
	createdSeries.get([2]string{provider, model}, func() prometheus.Counter {
		for _, status := range terminalStatuses {
			tasksFinished.WithLabelValues(provider, model, status)
		}
		return tasksCreated.WithLabelValues(provider, model)
	}).Inc()
	tasksActive.WithLabelValues(provider).Inc()
}

// TaskFinished counts a task first seen in a terminal status.
func TaskFinished(provider, model, status string) {
	tasksFinished.WithLabelValues(provider, model, status).Inc()
	tasksActive.WithLabelValues(provider).Dec()
}

// SetActiveTasks sets the number of unfinished tasks per provider, from a count of the store.
func SetActiveTasks(byProvider map[string]int) {
	tasksActive.Reset()
	for p, n := range byProvider {
		tasksActive.WithLabelValues(p).Set(float64(n))
	}
}

// RefreshLag observes how late a background refresh ran.
func RefreshLag(d time.Duration) { refreshLag.Observe(max(0, d.Seconds())) }

// Callback delivery outcomes.
const (
	CallbackDelivered = "delivered"
	CallbackGone      = "gone"
	CallbackRetry     = "retry"
	CallbackGivenUp   = "given_up"
	CallbackRefused   = "refused"
)

// callbackOutcomes are the values of mediagw_callback_deliveries_total's outcome label.
var callbackOutcomes = []string{CallbackDelivered, CallbackGone, CallbackRetry, CallbackGivenUp, CallbackRefused}

// CallbackDelivery counts one delivery attempt's outcome.
func CallbackDelivery(outcome string) { callbackDeliveries.WithLabelValues(outcome).Inc() }

// SetOutboxPending sets the number of events waiting in the callback outbox.
func SetOutboxPending(n int) { outboxPending.Set(float64(n)) }

// AnswerMemory adds n (negative: takes) to the bytes of provider answers held.
func AnswerMemory(n int64) { answerMemory.Add(float64(n)) }

// Rejected counts a request refused for reason (see Reason).
func Rejected(reason string) { rejections.WithLabelValues(reason).Inc() }

// spendSeries caches the series of mediagw_spend_micro_units_total by account and model.
var spendSeries seriesCache[[2]string, prometheus.Counter]

// Spent counts money charged to an account for a model, in micro-units (a settlement; a hold
// that is released counts nothing). Micro-units stay exact in the counter's float up to 2^53,
// about nine billion units.
func Spent(account, model string, amount int64) {
	if amount <= 0 {
		return
	}
	if !accountLabel.Load() {
		account = ""
	}
	c := spendSeries.get([2]string{account, model}, func() prometheus.Counter {
		if account == "" && !accountLabel.Load() {
			return spend.WithLabelValues(model)
		}
		return spendByAccount.WithLabelValues(account, model)
	})
	c.Add(float64(amount))
}
