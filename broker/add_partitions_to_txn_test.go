package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
)

// What a transactional writer answers for its coordinator's verdict: a
// coordinator that cannot answer now is NOT_ENOUGH_REPLICAS, except that
// Produce v12 (transaction version 2) gets CONCURRENT_TRANSACTIONS as it
// is, as Kafka 4 answers once its retries of the add are over.
func TestTxnErrorFor(t *testing.T) {
	for _, tc := range []struct {
		err                                    error
		version, abortableFrom, concurrentFrom int16
		want                                   *kerr.Error
	}{
		{nil, 12, 11, 12, nil},
		{kerr.ConcurrentTransactions, 12, 11, 12, kerr.ConcurrentTransactions},
		{kerr.ConcurrentTransactions, 13, 11, 12, kerr.ConcurrentTransactions},
		{kerr.ConcurrentTransactions, 11, 11, 12, kerr.NotEnoughReplicas},
		{kerr.ConcurrentTransactions, 5, 4, -1, kerr.NotEnoughReplicas}, // TxnOffsetCommit
		{kerr.CoordinatorLoadInProgress, 12, 11, 12, kerr.NotEnoughReplicas},
		{kerr.NotCoordinator, 12, 11, 12, kerr.NotEnoughReplicas},
		{apierr.Errorf(kerr.NetworkException, "down"), 12, 11, 12, kerr.NotEnoughReplicas},
		{kerr.ProducerFenced, 12, 11, 12, kerr.InvalidProducerEpoch},
		{kerr.TransactionAbortable, 10, 11, 12, kerr.InvalidTxnState},
		{kerr.TransactionAbortable, 11, 11, 12, kerr.TransactionAbortable},
	} {
		got := apierr.CodeOf(txnErrorFor(tc.err, tc.version, tc.abortableFrom, tc.concurrentFrom))
		if got != tc.want {
			t.Errorf("txnErrorFor(%v, v%d) = %v, want %v", tc.err, tc.version, got, tc.want)
		}
	}
}
