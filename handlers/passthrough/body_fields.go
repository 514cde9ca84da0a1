package passthrough

import (
	"encoding/json"
	"math/bits"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// bodyFields are the checked top-level fields of a JSON body (see readFields): the raw value of
// each of names, nil when the body has no such member. The values of up to len(few) names (as
// many as any endpoint's refFields) are kept in the struct itself, so that a body's fields cost
// no allocation.
type bodyFields struct {
	names []string
	few   [32]json.RawMessage
	more  []json.RawMessage // the values, when there are more names than few holds
	// present has bit i set when the body has names[i], for the names that few holds: get
	// looks among those only (most bodies have few of the fields checked).
	present uint32
}

// readFields applies jsonkeys' rule to the JSON object data with the checked fields names
// (jsonkeys.MembersOf), and returns their values.
func readFields(data []byte, names []string) (bodyFields, error) {
	var f bodyFields
	err := f.read(data, names)
	return f, err
}

// read is readFields filling f in place: a caller that keeps f among its own variables reads
// a body without copying the values out.
func (f *bodyFields) read(data []byte, names []string) error {
	f.names, f.more = names, nil
	if len(names) > len(f.few) {
		f.more = make([]json.RawMessage, len(names))
		return jsonkeys.MembersOf(data, names, f.more)
	}
	found := f.few[:len(names)]
	var err error
	if len(names) == len(modelAndPriced) && len(names) > 0 && &names[0] == &modelAndPriced[0] {
		err = jsonkeys.MembersOfFields(data, modelAndPricedFields, found) // most bodies' fields
	} else {
		err = jsonkeys.MembersOf(data, names, found)
	}
	f.present = 0
	for i, v := range found {
		if v != nil {
			f.present |= 1 << i
		}
	}
	return err
}

// get returns the raw value of the checked field name, and whether the body has it. A name
// that was not checked is absent.
func (f *bodyFields) get(name string) (json.RawMessage, bool) {
	if f.more == nil {
		for p := f.present; p != 0; p &= p - 1 {
			if i := bits.TrailingZeros32(p); f.names[i] == name {
				return f.few[i], true
			}
		}
		return nil, false
	}
	for i, n := range f.names {
		if n == name {
			return f.more[i], f.more[i] != nil
		}
	}
	return nil, false
}

// value is get's value alone (nil when absent).
func (f *bodyFields) value(name string) json.RawMessage {
	v, _ := f.get(name)
	return v
}
