package accounting

import "testing"

// BenchmarkMeterRequest is what a priced pass-through request counts in the meter, under its
// lock: its request (Accountant.Admit), its spend (Hold.Settle), and its usage record's
// aggregates (usage.Recorder: requests, three token counts and the amount). The meter does not
// flush during the run. Run it with
//
//	go test ./handlers/accounting/ -run '^$' -bench MeterRequest -benchmem -cpu 1 -count 6
func BenchmarkMeterRequest(b *testing.B) {
	_, _, m := countingMeter(b) // flushes only when closed
	b.Cleanup(m.Close)          // before the store's close, which was registered first
	const day = "usage/2026-11-27/bench/bench-priced/"
	names := []string{day + "requests", day + "tasks", day + "cost", day + "prompt_tokens", day + "completion_tokens", day + "total_tokens", day + "amount"}
	deltas := []int64{1, 0, 0, 9, 1, 10, 150}
	b.ReportAllocs()
	for b.Loop() {
		m.add(1, usageRequests, "key_01JD3X8W5Q7E2M9R4T6Y1U0I8O", "bench")
		m.add(150, usageSpent, "key_01JD3X8W5Q7E2M9R4T6Y1U0I8O", "bench")
		m.AddAll(names, deltas)
	}
}
