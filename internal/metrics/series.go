package metrics

import "sync"

// seriesCache keeps the labelled series of a metric vector by their label values, so that
// counting a request costs one map lookup under a read lock, not WithLabelValues' hashing of the
// labels and its allocations. The vectors are never reset (except tasks_active, which is not
// cached), so a cached series stays the one the registry exports.
type seriesCache[K comparable, S any] struct {
	mu sync.RWMutex
	m  map[K]S
}

// get returns the series of key, made by create the first time.
func (c *seriesCache[K, S]) get(key K, create func() S) S {
	c.mu.RLock()
	s, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok = c.m[key]; !ok {
		if c.m == nil {
			c.m = map[K]S{}
		}
		s = create()
		c.m[key] = s
	}
	return s
}
