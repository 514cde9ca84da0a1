package passthrough

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/storage"
)

// Owners is the part of the store that pass-through uses: one write that records the owner of a
// created upstream object and one read that finds it, and the same, batched, for the items that
// answers reveal (see items.go).
type Owners interface {
	CreateTask(ctx context.Context, task storage.Task) (storage.Task, error)
	Task(ctx context.Context, id string) (storage.Task, error)
	// ReplaceTask and ListTasks give back the active-task slots of finished objects (see
	// active_objects.go).
	ReplaceTask(ctx context.Context, task storage.Task) (storage.Task, error)
	ListTasks(ctx context.Context, account string, q storage.TaskQuery) (storage.TaskPage, error)
	ClaimItems(ctx context.Context, account string, ids []string, expiresAt time.Time) ([]string, error)
	ItemOwners(ctx context.Context, ids []string) ([]string, error)
}

// errNoObject answers every id the caller does not own, unknown ones included.
var errNoObject = apierror.New(http.StatusNotFound, "not_found", "no such object: it does not exist or does not belong to this account").WithParam("id")

// errRefused is a reference in the body to an object the caller does not own.
func errRefused(field, kind string) *apierror.Error {
	return apierror.New(http.StatusBadRequest, "invalid_request_body", fmt.Sprintf("%s names no %s of this account", field, kind)).WithParam(field)
}

// owned returns the record of an upstream object of the given kind that the caller's account
// owns, made with a model the caller's key may use (auth.Identity.Sees). An unknown id, another
// account's id and one of a model the key may not use are all errNoObject.
func (rt *Router) owned(ctx context.Context, caller auth.Identity, kind, id string) (storage.Task, error) {
	if rt.Owners == nil || id == "" {
		return storage.Task{}, errNoObject
	}
	t, err := rt.Owners.Task(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (!caller.Sees(t.Account, t.Model) || t.Kind != kind)) {
		return storage.Task{}, errNoObject
	}
	return t, err
}

// recordOwner records that the caller's account owns the upstream object objectID of the
// route's kind. It and claimItems (the items an answer reveals, see items.go) are the places
// pass-through writes ownership. An id already recorded for another account or kind is not taken
// over. When route.Slot holds an active-task slot, the new record keeps it (Active, status
// "active") and kept is true; an id recorded already keeps no second slot. answer is the
// create's answer when it was held whole (JSON), else nil: a video's record keeps the length
// and picture that it and the request say (see videoMade). When carry is set, the new record
// carries the create's hold (route.Hold: its id, amount, estimate and price, as a video task's
// record does), and carried is true once it is stored so. The record keeps the create's
// Idempotency-Key (route.IdempotencyKey); replay is set when the id was recorded already by a
// create that sent the same key (see replayOf).
func (rt *Router) recordOwner(ctx context.Context, id auth.Identity, route Route, objectID string, answer []byte, carry bool) (ownerRecord, error) {
	if rt.Owners == nil {
		return ownerRecord{}, errors.New("pass-through has no store to record the owner of " + route.Creates + " objects")
	}
	t := rt.now()
	retention := rt.Retention
	if retention <= 0 {
		retention = storage.DefaultTaskRetention
	}
	record := storage.Task{
		ID: objectID, Kind: route.Creates, Account: id.Account, KeyID: id.KeyID,
		Provider: route.Provider.Name, Upstream: route.answeredBy(), UpstreamAddress: route.answeredAt(), Model: route.Model, Status: "created",
		Endpoint: route.Endpoint, IdempotencyKey: route.IdempotencyKey, CreatedAt: t.Unix(), UpdatedAt: t.Unix(), ExpiresAt: t.Add(retention).Unix(),
	}
	if route.Creates == KindVideo {
		record.Usage = madeRecord(videoMade(route.Sizing, answer))
	}
	if carry {
		h := route.Hold
		record.HoldID, record.HoldAmount = h.ID, int64(h.Estimate.Amount)
		record.HoldUsage, record.HoldPrice = h.Estimate.Usage.Encode(), h.EncodedPrice()
	}
	if route.Slot.Held && runsAsync(route.Creates) {
		record.Active, record.Status = true, statusActive
	}
	// The store's create-if-absent decides, across instances, which of two creates answered
	// with one id made the record: the other one finds it below.
	stored, err := route.Slot.CreateTask(ctx, rt.Owners, record)
	if !errors.Is(err, storage.ErrExists) {
		// A claimed slot that the reconciler gave back first is not kept (stored without Active).
		return ownerRecord{kept: err == nil && stored.Active, carried: err == nil && carry}, err
	}
	// The id is recorded already: fine when it is this account's object of this kind (an
	// upstream that answers a retried create with the same id), never a takeover.
	existing, err := rt.Owners.Task(ctx, objectID)
	if err != nil {
		return ownerRecord{}, err
	}
	if existing.Account == id.Account && existing.Kind == route.Creates {
		return ownerRecord{replay: replayOf(existing, record)}, nil
	}
	return ownerRecord{}, fmt.Errorf("upstream %s id is already recorded for another owner", route.Creates)
}

// ownerRecord is what recordOwner stored: whether the record keeps the route's slot (kept) and
// carries its hold (carried), or whether the object was recorded already by the create this
// one replays (replay).
type ownerRecord struct {
	kept, carried, replay bool
}

// replayOf reports whether a create that would have recorded made, answered with the object
// whose record is existing (the same account's, of the same kind), is the provider's replay of
// the create that made it: an SDK's retry, which a provider keeping answers by Idempotency-Key
// answers with what the first attempt made. Only the same key says so (the key is the account's
// own, see scopeIdempotencyKey), sent to the same upstream for the same model. A create without
// a key, with another key, or answered elsewhere with a known id (a provider that reuses ids),
// is not one: it is charged. A record written before the key was kept has none: no replay.
func replayOf(existing, made storage.Task) bool {
	return made.IdempotencyKey != "" && existing.IdempotencyKey == made.IdempotencyKey &&
		existing.Model == made.Model && existing.Provider == made.Provider &&
		existing.Upstream == made.Upstream && existing.UpstreamAddress == made.UpstreamAddress
}

// namedObject is an owned upstream object that a request body names by id: the field, the kind
// and the object's record.
type namedObject struct {
	field, kind string
	record      storage.Task
}

// bindNamed sends a request whose body names owned objects (previous_response_id) to the upstream
// that made them, and only there, as a call on an object is (see resolveObject): the object lives
// there, and its id goes to no other upstream (another account of the provider, another provider,
// or an upstream name now configured with another base URL: see providers.Provider.Bound). An
// object out of reach so is refused like an unknown one.
func bindNamed(route *Route) error {
	for _, n := range route.named {
		if n.record.Provider != route.Provider.Name {
			return errRefused(n.field, n.kind)
		}
		u, ok := route.Provider.Bound(n.record.Upstream, n.record.UpstreamAddress)
		if !ok || route.BoundTo != nil && route.BoundTo != u {
			return errRefused(n.field, n.kind)
		}
		route.BoundTo = u
	}
	return nil
}

func (rt *Router) now() time.Time {
	if rt.Now != nil {
		return rt.Now()
	}
	return time.Now()
}
