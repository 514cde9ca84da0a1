package metrics

import (
	"strconv"
	"sync"
	"testing"
)

// TestSeriesCacheKeepsEachKeysSeries: keys asked for in turns and at once each get the series
// made for them, made once.
func TestSeriesCacheKeepsEachKeysSeries(t *testing.T) {
	var c seriesCache[[2]string, *string]
	var mu sync.Mutex
	made := map[[2]string]int{}
	get := func(k [2]string) *string {
		return c.get(k, func() *string {
			mu.Lock()
			made[k]++
			mu.Unlock()
			s := k[0] + "/" + k[1]
			return &s
		})
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				k := [2]string{"a" + strconv.Itoa((g+i)%3), "m" + strconv.Itoa(i%2)}
				if s := get(k); *s != k[0]+"/"+k[1] {
					t.Errorf("series of %v is %q", k, *s)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(made) != 6 {
		t.Errorf("%d series made, want 6", len(made))
	}
	for k, n := range made {
		if n != 1 {
			t.Errorf("the series of %v was made %d times", k, n)
		}
	}
}

// BenchmarkRequestSeries is the request counter of a run of requests with the same labels.
func BenchmarkRequestSeries(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Request("/v1/chat/completions", "chat", "bench-chat", 200)
	}
}
