// Package storetest is the conformance suite of the storage contract: every backend of
// storage.Store must pass Run, under go test -race. It tests behaviour that handlers rely on:
// create-if-absent, compare-and-set under races, leases, limits, TTL expiry, reopening, and the
// durability of an acknowledged write across a crash of the process.
package storetest

import (
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// Backend opens the store under test.
type Backend struct {
	// NewLocation returns a fresh, empty place for a store (a directory, a key prefix…).
	NewLocation func(t *testing.T) string
	// Open opens the store at location. Opening a location again after Close, in this process or
	// another, sees every write acknowledged before.
	Open func(t *testing.T, location string) storage.Store
}

// Run runs the conformance suite. The crash test runs the test binary again as a child process
// (with -test.run naming the calling test), so the calling test must call Run unconditionally.
func Run(t *testing.T, b Backend) {
	if runCrashChild(t, b) {
		return
	}
	fresh := func(t *testing.T) storage.Store {
		t.Helper()
		s := b.Open(t, b.NewLocation(t))
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("closing the store: %v", err)
			}
		})
		return s
	}
	t.Run("TaskCreateIfAbsent", func(t *testing.T) { testTaskCreateIfAbsent(t, fresh(t)) })
	t.Run("TaskCompareAndSet", func(t *testing.T) { testTaskCompareAndSet(t, fresh(t)) })
	t.Run("TaskTwoUpdaters", func(t *testing.T) { testTaskTwoUpdaters(t, fresh(t)) })
	t.Run("TaskFinishedOnce", func(t *testing.T) { testTaskFinishedOnce(t, fresh(t)) })
	t.Run("TaskKeepsEndpoint", func(t *testing.T) { testTaskKeepsEndpoint(t, fresh(t)) })
	t.Run("TaskKeepsIdempotencyKey", func(t *testing.T) { testTaskKeepsIdempotencyKey(t, fresh(t)) })
	t.Run("TaskFoundByIdempotencyKey", func(t *testing.T) { testTaskFoundByIdempotencyKey(t, fresh(t)) })
	t.Run("TaskBatchCompareAndSet", func(t *testing.T) { testTaskBatchCompareAndSet(t, fresh(t)) })
	t.Run("TaskBatchFinishedOnce", func(t *testing.T) { testTaskBatchFinishedOnce(t, fresh(t)) })
	t.Run("TaskIDReused", func(t *testing.T) { testTaskIDReused(t, fresh(t)) })
	t.Run("TaskRetentionFromFinish", func(t *testing.T) { testTaskRetentionFromFinish(t, fresh(t)) })
	t.Run("TaskListAndIndexes", func(t *testing.T) { testTaskListAndIndexes(t, fresh(t)) })
	t.Run("TaskListCursor", func(t *testing.T) { testTaskListCursor(t, fresh(t)) })
	t.Run("TaskListModelAllowed", func(t *testing.T) { testTaskListModelAllowed(t, fresh(t)) })
	t.Run("TaskSearchModelAllowed", func(t *testing.T) { testTaskSearchModelAllowed(t, fresh(t)) })
	t.Run("TaskListSameSecond", func(t *testing.T) { testTaskListSameSecond(t, fresh(t)) })
	t.Run("TaskSearch", func(t *testing.T) { testTaskSearch(t, fresh(t)) })
	t.Run("TaskSearchAll", func(t *testing.T) { testTaskSearchAll(t, fresh(t)) })
	t.Run("ItemClaims", func(t *testing.T) { testItemClaims(t, fresh(t)) })
	t.Run("ItemClaimRace", func(t *testing.T) { testItemClaimRace(t, fresh(t)) })
	t.Run("Watching", func(t *testing.T) { testWatching(t, fresh(t)) })
	t.Run("ReadLogs", func(t *testing.T) { testReadLogs(t, fresh(t)) })
	t.Run("RelayTokenExpires", func(t *testing.T) { testRelayTokenExpires(t, fresh(t)) })
	t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, fresh(t)) })
	t.Run("IdempotencyRace", func(t *testing.T) { testIdempotencyRace(t, fresh(t)) })
	t.Run("IdempotencyExpires", func(t *testing.T) { testIdempotencyExpires(t, fresh(t)) })
	t.Run("IdempotencyLease", func(t *testing.T) { testIdempotencyLease(t, fresh(t)) })
	t.Run("OutboxDueOrder", func(t *testing.T) { testOutboxDueOrder(t, fresh(t)) })
	t.Run("OutboxTwoClaimers", func(t *testing.T) { testOutboxTwoClaimers(t, fresh(t)) })
	t.Run("OutboxLeaseExpiry", func(t *testing.T) { testOutboxLeaseExpiry(t, fresh(t)) })
	t.Run("Deliveries", func(t *testing.T) { testDeliveries(t, fresh(t)) })
	t.Run("DeliveriesRace", func(t *testing.T) { testDeliveriesRace(t, fresh(t)) })
	t.Run("Leases", func(t *testing.T) { testLeases(t, fresh(t)) })
	t.Run("LeaseRace", func(t *testing.T) { testLeaseRace(t, fresh(t)) })
	t.Run("RenewLeases", func(t *testing.T) { testRenewLeases(t, fresh(t)) })
	t.Run("Counter200Goroutines", func(t *testing.T) { testCounterManyGoroutines(t, fresh(t)) })
	t.Run("CounterTwoLimiters", func(t *testing.T) { testCounterLimiters(t, fresh(t)) })
	t.Run("RateWindow", func(t *testing.T) { testRateWindow(t, fresh(t)) })
	t.Run("RateWindowRace", func(t *testing.T) { testRateWindowRace(t, fresh(t)) })
	t.Run("RateWindowAcrossDates", func(t *testing.T) { testRateWindowAcrossDates(t, fresh(t)) })
	t.Run("Keys", func(t *testing.T) { testKeys(t, fresh(t)) })
	t.Run("KeyRevokeSeenAtOnce", func(t *testing.T) { testKeyRevokeSeenAtOnce(t, fresh(t)) })
	t.Run("Accounts", func(t *testing.T) { testAccounts(t, fresh(t)) })
	t.Run("DirectoryPages", func(t *testing.T) { testDirectoryPages(t, fresh(t)) })
	t.Run("SettingOnce", func(t *testing.T) { testSettingOnce(t, fresh(t)) })
	RunLedger(t, fresh)
	t.Run("Reopen", func(t *testing.T) { testReopen(t, b) })
	t.Run("DurableAcrossCrash", func(t *testing.T) { testDurableAcrossCrash(t, b) })
}
