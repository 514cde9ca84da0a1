package passthrough

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/jsonkeys"
	"github.com/mediagw/mediagw/storage"
)

// Items of Responses answers.
//
// A response's output items (message msg_…, reasoning rs_…, function_call fc_…, tool calls …)
// and the input items that input_items lists carry ids, and a later request may name them: an
// item_reference, or an item given with its id, which an upstream that stores items may load by
// the id alone (a reasoning item without its encrypted_content). Every account of the gateway
// shares the operator's upstream organisation, which therefore cannot tell the accounts apart: the
// gateway records the id of every item it hands to an account as that account's (KindResponseItem,
// in storage.Items), and refuses an input item whose id is not the caller's own.
//
// When the record is written: once per answer, one batched write of all the answer's item ids,
// not one per item and not before each item's first byte. A JSON answer (create, retrieve,
// cancel, input_items) is held whole anyway, so its ids are written before any byte of it is
// sent. A streamed answer passes its events as they come and collects the item ids of
// response.output_item.added/.done events and of every event carrying a response; the batch is
// written before the next event that carries a response (response.completed, .incomplete,
// .failed: the terminal event is held until the record is durable), before any event too large to
// read, and at the end of the stream. So a client may see an item's id in its stream a moment
// before the record exists, during which the id is unusable to everyone, its owner included;
// nobody else can ever claim it, since ids are only claimed from answers to their owner. That
// costs one store write per answer instead of one per item (a reasoning model's answer has
// several), and none when every id is recorded already (a response read again).
//
// An answer too large to hold (see CreatedWriter) passes with its ids unrecorded: they are then
// unusable. This fails closed.

// maxAnswerItems bounds the item ids collected from one answer; more are not recorded (and so are
// unusable).
const maxAnswerItems = 4 * storage.MaxItemClaim

// MaxBodyItems bounds the distinct item ids one request body may name (replayed items, item
// references); an id named again does not count again. They are read from the store
// storage.MaxItemClaim at a time. Past it: 400.
const MaxBodyItems = 10_000

var errTooManyItems = apierror.New(http.StatusBadRequest, "invalid_request_body",
	fmt.Sprintf("the body names more than %d items by id", MaxBodyItems))

// itemID is an object of an answer that carries an id.
type itemID struct {
	ID string `json:"id"`
}

// answerItems returns the ids of the items of a JSON answer: the output of a response (create,
// retrieve, cancel) or the data of a list (input_items). An answer that is not JSON has none.
func answerItems(body []byte) []string {
	var a struct {
		Output []itemID `json:"output"`
		Data   []itemID `json:"data"`
	}
	if json.Unmarshal(body, &a) != nil {
		return nil
	}
	return appendIDs(appendIDs(nil, a.Output), a.Data)
}

func appendIDs(ids []string, items []itemID) []string {
	for _, it := range items {
		if it.ID != "" {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// streamEvent is what the gateway reads of a server-sent event of a create or retrieve stream.
type streamEvent struct {
	// ID is the data object's own id.
	ID string `json:"id"`
	// Item is the item of response.output_item.added and .done.
	Item *itemID `json:"item"`
	// Response is the response of response.created, .in_progress, .completed, .incomplete and
	// .failed.
	Response *struct {
		ID     string   `json:"id"`
		Output []itemID `json:"output"`
	} `json:"response"`
}

// quotedID is the key every id this package reads from an event is under. An event without it
// carries none (text deltas name their item as item_id) and is not decoded: a JSON string value
// holds a quote only escaped, so the bytes "id" in quotes are a key.
var quotedID = []byte(`"id"`)

// readEvent decodes the data of a server-sent event; ok is false when it carries no id or is not
// a JSON object.
func readEvent(event []byte) (streamEvent, bool) {
	if deltaEvent(event) || !bytes.Contains(event, quotedID) {
		return streamEvent{}, false
	}
	return decodeEvent(event)
}

// deltaEvent reports whether an event's first line names it a delta (response.output_text.delta,
// response.function_call_arguments.delta, …): the bulk of a stream, which carries a piece of text
// and names its item only as item_id. It is not searched.
func deltaEvent(event []byte) bool {
	name, ok := bytes.CutPrefix(event, []byte("event:"))
	if !ok {
		return false
	}
	if end := bytes.IndexAny(name, "\r\n"); end >= 0 {
		name = name[:end]
	}
	return bytes.HasSuffix(bytes.TrimRight(name, " "), []byte(".delta"))
}

// decodeEvent decodes the data lines of an event, which end with "\r\n", "\n" or "\r", and are
// joined with line feeds (the SSE rule).
func decodeEvent(event []byte) (e streamEvent, ok bool) {
	var data []byte
	lines := 0
	for len(event) > 0 {
		line := event
		event = nil
		if end := bytes.IndexAny(line, "\r\n"); end >= 0 {
			event = line[end+1:]
			if line[end] == '\r' && len(event) > 0 && event[0] == '\n' {
				event = event[1:]
			}
			line = line[:end]
		}
		if v, found := bytes.CutPrefix(line, []byte("data:")); found {
			if lines++; lines > 1 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	if len(data) == 0 || json.Unmarshal(data, &e) != nil {
		return streamEvent{}, false
	}
	return e, true
}

// items returns the item ids an event carries.
func (e streamEvent) items() []string {
	var ids []string
	if e.Item != nil && e.Item.ID != "" {
		ids = append(ids, e.Item.ID)
	}
	if e.Response != nil {
		ids = appendIDs(ids, e.Response.Output)
	}
	return ids
}

// answerItemIDs collects the item ids of one answer until they are claimed.
type answerItemIDs struct {
	seen    map[string]bool
	pending []string
	dropped bool
}

// add collects ids not collected before, up to maxAnswerItems; it reports whether some were
// dropped for the first time.
func (a *answerItemIDs) add(ids []string) (droppedNow bool) {
	for _, id := range ids {
		if a.seen[id] {
			continue
		}
		if len(a.seen) == maxAnswerItems {
			droppedNow, a.dropped = !a.dropped, true
			return droppedNow
		}
		if a.seen == nil {
			a.seen = map[string]bool{}
		}
		a.seen[id] = true
		a.pending = append(a.pending, id)
	}
	return false
}

// inputItemRefs adds the item ids an input item of a Responses body names: its own id, whatever
// its type (an item_reference is nothing but the id; a replayed message, reasoning or tool call
// given with its id may be loaded by it, content or not), and the approval_request_id of an MCP
// approval response, which names the mcp_approval_request item it answers. Each key that folds to
// one of them counts. A type sent twice in different letter cases is refused.
//
// Other ids inside an item are not item ids: call_id pairs a tool call with its output inside the
// request's own context, and acknowledged_safety_checks[].id the checks of the computer call it
// answers; the upstream resolves neither from its store.
//
// An item id that is neither a string nor null is refused: a lenient upstream might read it as
// one, and it would not have been checked.
func inputItemRefs(path *jsonkeys.Path, members []jsonkeys.Member, found *foundRefs) error {
	if _, err := exactType(path, members); err != nil {
		return err
	}
	for _, m := range members {
		if !strings.EqualFold(m.Key, "id") && !strings.EqualFold(m.Key, "approval_request_id") {
			continue
		}
		param := member(path, m.Key)
		if len(m.Value) > 0 && m.Value[0] != '"' && string(m.Value) != "null" {
			return apierror.New(http.StatusBadRequest, "invalid_request_body", param.String()+" must be a string").WithParam(param.String())
		}
		if err := found.add(param, KindResponseItem, m.Value); err != nil {
			return err
		}
	}
	return nil
}

// itemRecord is what the store keeps as the owner of a response item: the account and the model
// of the call whose answer revealed it, "account\nmodel" (an account name holds no line break).
// The model is kept so that a key restricted to some models can name no item of its account's
// work with another model, as it can read no such response (auth.Identity.Sees).
func itemRecord(account, model string) string {
	if model == "" {
		return account
	}
	return account + "\n" + model
}

// itemRecordOwner reads an itemRecord. A record written before models were kept is a bare
// account: its model is "", which Sees reads as the account's alone.
func itemRecordOwner(record string) (account, model string) {
	account, model, _ = strings.Cut(record, "\n")
	return account, model
}

// claimItems records the caller's account and the call's model as the owner of item ids revealed
// to it, in batches of storage.MaxItemClaim (one batch but for the largest answers). The model is
// the route's: the model of a create, the object's own on a call about a response.
//
// An id that another account owns already keeps its owner, and the answer still goes to the
// caller, who cannot use that id. The caller cannot have provoked it (it can name no item that is
// not its own), so it is an upstream whose ids are not unique (some compatible servers number
// items per response): withholding the answer would break every later answer of such an upstream
// for all but the first account, while the ownership rule holds either way.
func (rt *Router) claimItems(ctx context.Context, id auth.Identity, model string, ids []string) error {
	if rt.Owners == nil {
		return errors.New("pass-through has no store to record the owner of response items")
	}
	retention := rt.Retention
	if retention <= 0 {
		retention = storage.DefaultTaskRetention
	}
	expires := rt.now().Add(retention)
	for len(ids) > 0 {
		batch := ids[:min(len(ids), storage.MaxItemClaim)]
		ids = ids[len(batch):]
		taken, err := rt.Owners.ClaimItems(ctx, itemRecord(id.Account, model), batch, expires)
		if err != nil {
			return err
		}
		if len(taken) > 0 && rt.Logger != nil {
			rt.Logger.Warn("response items of an answer are recorded for another account or model; they stay that owner's",
				zap.Int("items", len(taken)), zap.String("account", id.Account))
		}
	}
	return nil
}

// checkItems refuses the first item reference whose id is not an item the caller sees: one of
// its account's, revealed by a call of a model the key may use (see itemRecord); an item of
// another model is refused as an unknown one is. It reads the owners of the distinct ids from the
// store storage.MaxItemClaim at a time.
func (rt *Router) checkItems(ctx context.Context, id auth.Identity, items []ref) error {
	if len(items) == 0 {
		return nil
	}
	if rt.Owners == nil {
		return errRefused(items[0].param, KindResponseItem)
	}
	ids := make([]string, 0, len(items))
	index := make(map[string]int, len(items))
	for _, it := range items {
		if _, ok := index[it.id]; !ok {
			index[it.id] = len(ids)
			ids = append(ids, it.id)
		}
	}
	owners := make([]string, 0, len(ids))
	for batch := range slices.Chunk(ids, storage.MaxItemClaim) {
		read, err := rt.Owners.ItemOwners(ctx, batch)
		if err != nil {
			return err
		}
		owners = append(owners, read...)
	}
	for _, it := range items {
		if account, model := itemRecordOwner(owners[index[it.id]]); it.id == "" || account == "" || !id.Sees(account, model) {
			return errRefused(it.param, KindResponseItem)
		}
	}
	return nil
}
