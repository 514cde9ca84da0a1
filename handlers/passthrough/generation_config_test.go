package passthrough

import (
	"math"
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
)

// TestGenerationLimits: a generate-content body's generationConfig.maxOutputTokens is its output
// limit and candidateCount its n, in either of the protocol's spellings, in any case, repeated,
// as a number or a string holding one: the largest of each is held. A value that is not a
// positive whole number counts as absent, but an output limit of zero or less names no bound.
func TestGenerationLimits(t *testing.T) {
	for _, c := range []struct {
		body          string
		output, count int64
	}{
		{`{"contents":[]}`, 0, 0},
		{`{"contents":[],"generationConfig":{"maxOutputTokens":100}}`, 100, 0},
		{`{"generation_config":{"max_output_tokens":200,"candidate_count":3}}`, 200, 3},
		{`{"generationConfig":{"maxOutputTokens":10},"generation_config":{"max_output_tokens":5000}}`, 5000, 0},
		{`{"generationConfig":{"maxOutputTokens":10,"maxOutputTokens":7000}}`, 7000, 0},
		{`{"GenerationConfig":{"MAXOUTPUTTOKENS":300,"candidateCount":2.0}}`, 300, 2},
		{`{"generationConfig":{"maxOutputTokens":"100000","candidateCount":-2}}`, 100000, 0},
		{`{"generationConfig":{"maxOutputTokens":"x","candidateCount":"2"}}`, 0, 2},
		{`{"generationConfig":null,"contents":[{"parts":[{"text":"generationConfig maxOutputTokens 9"}]}]}`, 0, 0},
		{`{"generationConfig":{"maxOutputTokens":1e2}}`, 100, 0},
		// A limit of zero or less names no bound: the model's max_output is held.
		{`{"generationConfig":{"maxOutputTokens":-1},"generation_config":{"max_output_tokens":10}}`, 0, 0},
		{`{"generationConfig":{"maxOutputTokens":10,"max_output_tokens":"0"}}`, 0, 0},
	} {
		q := billing.Request{}
		generationLimits([]byte(c.body), &q)
		if q.MaxOutput != c.output || q.N != c.count {
			t.Errorf("%s: output %d, n %d; want %d and %d", c.body, q.MaxOutput, q.N, c.output, c.count)
		}
	}
}

// TestNumberOrString: a limit written as a string holding a number is that number, as an upstream
// that coerces strings reads it; anything else is 0.
func TestNumberOrString(t *testing.T) {
	for raw, want := range map[string]int64{
		`100`: 100, `"100000"`: 100000, `" 100_000 "`: 100000, `"\u0031\u0030"`: 10, `"1e2"`: 100,
		`"x"`: 0, `""`: 0, `"-5"`: 0, `"1.5"`: 0, `true`: 0, `null`: 0, `"9223372036854775808"`: math.MaxInt64, `"4.0000000000000001"`: 4,
	} {
		if got := numberOrString([]byte(raw)); got != want {
			t.Errorf("%s: %d; want %d", raw, got, want)
		}
	}
}
