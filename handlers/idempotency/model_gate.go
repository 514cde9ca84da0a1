package idempotency

import (
	"encoding/json"
	"net/http"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// ModelGate is the MayAsk of a key that may use only the models allowed reports (nil: every
// model, and the gate is nil too). modelOf reads the model a create's body names; refuse writes
// the create's own answer to a model the key may not use. A body whose model cannot be read
// ("") passes: the create refuses it, and so no answer of it was kept.
func ModelGate(allowed func(model string) bool, modelOf func(body []byte) string, refuse func(w http.ResponseWriter, model string)) MayAsk {
	if allowed == nil {
		return nil
	}
	return func(w http.ResponseWriter, body []byte) bool {
		model := modelOf(body)
		if model == "" || allowed(model) {
			return true
		}
		refuse(w, model)
		return false
	}
}

// JSONModel is the model a JSON body names: its "model" member when that is one string, else "".
func JSONModel(body []byte) string {
	m, err := jsonkeys.Members(body, "model")
	if err != nil {
		return ""
	}
	var model string
	if json.Unmarshal(m["model"], &model) != nil {
		return ""
	}
	return model
}
