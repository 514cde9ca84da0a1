package providers

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// Order returns the provider's upstreams that may serve account, in the order to try them: the
// lowest priority first, and within a priority a weighted random order (an upstream of weight 3
// comes first three times as often as one of weight 1). Upstreams in cooldown, or where the
// account backs off, are left out. When none is left, Order returns none and the time until the
// first may serve again.
//
// The slice may be the provider's own (for a provider of one upstream): read it, never change it.
func (p *Provider) Order(account string) ([]*Upstream, time.Duration) {
	now := p.health.now()
	if len(p.Upstreams) == 1 {
		// The usual provider: nothing to order, and no copy to make.
		if until := p.health.coolingUntil(p.Upstreams[0], account); until.After(now) {
			return nil, until.Sub(now)
		}
		return p.Upstreams[:1:1], 0
	}
	healthy := make([]*Upstream, 0, len(p.Upstreams))
	var soonest time.Time
	for _, u := range p.Upstreams {
		until := p.health.coolingUntil(u, account)
		if !until.After(now) {
			healthy = append(healthy, u)
		} else if soonest.IsZero() || until.Before(soonest) {
			soonest = until
		}
	}
	if len(healthy) == 0 {
		return nil, soonest.Sub(now)
	}
	slices.SortStableFunc(healthy, func(a, b *Upstream) int { return a.Priority - b.Priority })
	for start := 0; start < len(healthy); {
		end := start + 1
		for end < len(healthy) && healthy[end].Priority == healthy[start].Priority {
			end++
		}
		weightedShuffle(healthy[start:end])
		start = end
	}
	return healthy, 0
}

// weightedShuffle orders list so that each position is drawn by weight from what is left.
func weightedShuffle(list []*Upstream) {
	for i := 0; i < len(list)-1; i++ {
		total := 0
		for _, u := range list[i:] {
			total += u.weight()
		}
		pick := rand.IntN(total)
		for j := i; j < len(list); j++ {
			if pick -= list[j].weight(); pick < 0 {
				list[i], list[j] = list[j], list[i]
				break
			}
		}
	}
}

func (u *Upstream) weight() int { return max(u.Weight, 1) }

// NoUpstream is the refusal when every upstream of a provider cools down: 503 with the seconds
// until the first one may serve again, for the Retry-After header.
func NoUpstream(p *Provider, retryAfter time.Duration) *apierror.Error {
	retryAfter = max(retryAfter, time.Second)
	secs := int64((retryAfter + time.Second - 1) / time.Second)
	return apierror.New(http.StatusServiceUnavailable, "upstream_unavailable",
		fmt.Sprintf("every upstream of provider %s is failing or rate limited; retry in %d s", p.Name, secs)).
		WithRetryAfter(retryAfter)
}
