package callbacks

import (
	"context"
	"encoding/json"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

// maxDeliveryError bounds the error text kept with a delivery record.
const maxDeliveryError = 200

// recordDelivery keeps the outcome of one attempt with the task (storage.Deliveries), for the
// console's task page. The record holds the receiver's status or the error without the URL (a
// callback URL may carry the client's token). A failure to record is logged and changes nothing
// about the delivery.
func (o *Outbox) recordDelivery(ctx context.Context, ev Event, attempt int, outcome string, status int, err error) {
	var body struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(ev.Body, &body) != nil {
		body.Status = "" // an answer that is not an object: the record goes without the status
	}
	d := storage.Delivery{TaskID: ev.TaskID, EventID: ev.ID, Status: body.Status, Attempt: attempt,
		At: o.Now().UnixNano(), Outcome: outcome, HTTPStatus: status}
	if err != nil {
		d.Error = upstream.WithoutURL(err).Error()
		if len(d.Error) > maxDeliveryError {
			d.Error = d.Error[:maxDeliveryError]
		}
	}
	keep := o.KeepDeliveries
	if keep <= 0 {
		keep = storage.DefaultTaskRetention
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := o.Store.RecordDelivery(ctx, d, keep); err != nil {
		o.Logger.Warn("recording a callback delivery for the console", zap.String("task_id", ev.TaskID), zap.Error(err))
	}
}
