package metrics

import (
	"sync"
	"sync/atomic"
)

// seriesCache keeps the labelled series of a metric vector by their label values, so that
// counting a request costs a comparison with the series counted last (requests come in runs of
// the same labels) or one map lookup under a read lock, not WithLabelValues' hashing of the
// labels and its allocations. The vectors are never reset (except tasks_active, which is not
// cached), so a cached series stays the one the registry exports.
type seriesCache[K comparable, S any] struct {
	last atomic.Pointer[cachedSeries[K, S]]
	mu   sync.RWMutex
	m    map[K]*cachedSeries[K, S]
}

// cachedSeries is the series of key.
type cachedSeries[K comparable, S any] struct {
	key    K
	series S
}

// get returns the series of key, made by create the first time.
func (c *seriesCache[K, S]) get(key K, create func() S) S {
	if e := c.last.Load(); e != nil && e.key == key {
		return e.series
	}
	c.mu.RLock()
	e := c.m[key]
	c.mu.RUnlock()
	if e == nil {
		e = c.add(key, create)
	}
	c.last.Store(e)
	return e.series
}

// add makes the series of key unless another caller just did.
func (c *seriesCache[K, S]) add(key K, create func() S) *cachedSeries[K, S] {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil {
		if c.m == nil {
			c.m = map[K]*cachedSeries[K, S]{}
		}
		e = &cachedSeries[K, S]{key: key, series: create()}
		c.m[key] = e
	}
	return e
}
