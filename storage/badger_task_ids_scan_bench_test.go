package storage

import (
	"fmt"
	"testing"
)

// BenchmarkBadgerTaskIDScan is what one scan of the task ids (the filter's build at the open and
// at each rebuild, once per about 3L creates of a store keeping L tasks) costs in a store of
// 300,000 records of 200 bytes, most of them in tables: time and bytes allocated per record
// scanned. A scan reads the tables' blocks, values and all, not the keys alone.
//
//	go test ./storage/ -run '^$' -bench BadgerTaskIDScan -benchmem -cpu 1
func BenchmarkBadgerTaskIDScan(b *testing.B) {
	const records = 300_000
	s := openTaskRecordsBench(b, records)
	defer s.Close()
	for b.Loop() {
		s.creates.ids.scans.Add(1)
		s.creates.scan() // as scanLocked's goroutine runs it
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
	s.creates.mu.Lock()
	defer s.creates.mu.Unlock()
	if f := s.creates.ids.active; f == nil || f.n < records {
		b.Fatalf("the scan made no filter of the %d records", records)
	}
}

// openTaskRecordsBench opens a Badger store holding n task records of 200 bytes
// (cgt-20261127222715-00000000 on), written in one batch so that most of them reach tables.
func openTaskRecordsBench(b *testing.B, n int) *Badger {
	b.Helper()
	s, err := OpenBadger(b.TempDir(), BadgerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	wb := s.db.NewWriteBatch()
	record := make([]byte, 200)
	for i := range n {
		if err := wb.Set(fmt.Appendf(nil, "%scgt-20261127222715-%08d", prefixTask, i), record); err != nil {
			s.Close()
			b.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		s.Close()
		b.Fatal(err)
	}
	return s
}
