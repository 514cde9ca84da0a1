package adaptor

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/mediagw/mediagw/handlers/upstream"
)

// Malformed is a provider's answer about a task that is JSON but gives a member the adaptor
// needs (a task's state, its result's address) a JSON type other than the provider's reference
// gives it. The task API answers the poll 502 invalid_response with Error's text, leaves the
// task as it is (the next answer may be right), and expires the task once its
// execution_expires_after has passed with the answers still unusable, as it does a task whose
// state no rule maps: the read is never retried past that bound.
type Malformed struct {
	// Member is the member's path in the answer ("data.task_status"); "" for the answer itself.
	Member string
	// Got is the JSON type the provider sent ("number"), Want the Go type the adaptor reads.
	Got, Want string
}

func (m *Malformed) Error() string {
	member := m.Member
	if member == "" {
		member = "the answer"
	}
	return "the provider's answer gives " + member + " a " + m.Got + " where the provider's reference gives a " + m.Want
}

// DecodeAnswer decodes a provider's answer about a task into v, whose fields are the members
// the adaptor reads: those it needs typed as the reference types them, those it may do without
// as Text or Number, which take any JSON value. Members v does not declare are not read at all,
// whatever they hold. An answer that is not JSON is upstream.ErrUnreadable; a needed member of
// another type is a *Malformed naming it.
func DecodeAnswer(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr):
		want := "value"
		if typeErr.Type != nil {
			want = typeErr.Type.Kind().String()
		}
		return &Malformed{Member: typeErr.Field, Got: typeErr.Value, Want: want}
	}
	return upstream.ErrUnreadable
}

// Text is a string member an adaptor may do without (a message, a size): a JSON string is its
// value, any other JSON value reads as "", as if the member were absent.
type Text string

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) != nil {
		s = ""
	}
	*t = Text(s)
	return nil
}

// Number is a number member an adaptor may do without (a length, a width): a JSON number, or a
// JSON string that holds one (as some references spell them, Kling's "5"), is its text; any
// other value reads as "", absent.
type Number string

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (n *Number) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) != nil {
		s = string(b)
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		s = "" // not a number, or one past float64's range (1e400)
	}
	*n = Number(s)
	return nil
}

// Float is the number, and false when it is absent.
func (n Number) Float() (float64, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}
