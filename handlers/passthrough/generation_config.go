package passthrough

import (
	"strings"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// generationLimits adds to q what a generate-content body's generationConfig says it may use:
// maxOutputTokens as its output limit, and candidateCount as its n (a chat completion's n),
// when they are more than q has. The protocol's JSON takes each field in lowerCamelCase and in
// snake_case (generation_config, max_output_tokens, candidate_count); every spelling, in any
// letter case and however often repeated, is read, and the largest value of each is held, so
// that whichever one the upstream honours was held. body is valid JSON (the router's checked
// body). A value is a number or a string holding one, as the protocol's JSON takes an integer;
// one that is not a positive whole number counts as absent, and one of zero or less names no
// bound (unboundedLimit): the model's max_output is held whatever the others say.
func generationLimits(body []byte, q *billing.Request) {
	unbounded := false
	defer func() {
		if unbounded {
			q.MaxOutput = 0
		}
	}()
	for _, top := range jsonkeys.OthersValid(body) {
		if !foldedAny(top.Key, "generationConfig", "generation_config") || len(top.Value) == 0 || top.Value[0] != '{' {
			continue
		}
		for _, m := range jsonkeys.OthersValid(top.Value) {
			switch {
			case foldedAny(m.Key, "maxOutputTokens", "max_output_tokens"):
				q.MaxOutput = max(q.MaxOutput, numberOrString(m.Value))
				unbounded = unbounded || unboundedLimit(m.Value)
			case foldedAny(m.Key, "candidateCount", "candidate_count"):
				q.N = max(q.N, numberOrString(m.Value))
			}
		}
	}
}

// foldedAny reports whether key is one of names in any letter case.
func foldedAny(key string, names ...string) bool {
	for _, name := range names {
		if strings.EqualFold(key, name) {
			return true
		}
	}
	return false
}
