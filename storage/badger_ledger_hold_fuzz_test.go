package storage

import (
	"encoding/hex"
	"testing"
)

// FuzzHoldRecord: any bytes read as a hold record (either binary form) decode to a hold or an
// error, never a panic, and a hold decoded encodes to a record that decodes to it again under
// the same id: amounts, state, account and dates kept.
func FuzzHoldRecord(f *testing.F) {
	v1, err := hex.DecodeString(goldenHoldV1)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v1)
	f.Add(goldenHold().encode())
	f.Add([]byte{ledgerHoldV2})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || (b[0] != ledgerRecordV1 && b[0] != ledgerHoldV2) {
			return // JSON: TestLedgerReadsJSONRecordsOfEarlierVersions
		}
		var got holdRecord
		if err := got.decode("hold_1", b); err != nil {
			return
		}
		var back holdRecord
		if err := back.decode(got.Hold.ID, got.encode()); err != nil || back != got {
			t.Fatalf("%+v encoded and decoded is %+v, %v", got, back, err)
		}
	})
}
