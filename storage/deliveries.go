package storage

import (
	"context"
	"time"
)

// MaxDeliveries is how many callback delivery records a task keeps: the newest ones.
const MaxDeliveries = 20

// Deliveries keeps the outcome of each callback delivery attempt of a task, so that the console
// can show a task's deliveries without reading logs. A task keeps its newest MaxDeliveries
// records, each for at least the ttl given when it was recorded (the task record's retention):
// Badger expires each record on its own, Redis the task's records together ttl after the newest.
type Deliveries interface {
	// RecordDelivery adds d to the records of d.TaskID, dropping the oldest past
	// MaxDeliveries. It is not made durable by itself (a record lost in a crash is only a line
	// missing from a page).
	RecordDelivery(ctx context.Context, d Delivery, ttl time.Duration) error
	// TaskDeliveries returns the records of a task, oldest first.
	TaskDeliveries(ctx context.Context, taskID string) ([]Delivery, error)
}

// Delivery is one callback delivery attempt.
type Delivery struct {
	TaskID string `json:"task_id"`
	// EventID is the webhook-id (one per task status change, the same across retries).
	EventID string `json:"event_id"`
	// Status is the task status the callback reported.
	Status string `json:"status,omitempty"`
	// Attempt counts from 1.
	Attempt int `json:"attempt"`
	// At is when the attempt ended (Unix nanoseconds).
	At int64 `json:"at"`
	// Outcome is delivered, gone, retry, given_up or refused (as the metric
	// mediagw_callback_deliveries_total counts them).
	Outcome string `json:"outcome"`
	// HTTPStatus is the receiver's answer, 0 when there was none.
	HTTPStatus int `json:"http_status,omitempty"`
	// Error says why there was no answer, without the URL.
	Error string `json:"error,omitempty"`
}

// Time is At as a time.
func (d Delivery) Time() time.Time { return time.Unix(0, d.At).UTC() }
