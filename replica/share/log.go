package share

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/replica"
)

// Log is what share partitions need of the partitions this broker leads:
// Kafka's SharePartitionManager reads through the ReplicaManager.
type Log interface {
	// LeaderEpoch is the partition's leader epoch while this broker
	// leads it, else NOT_LEADER_OR_FOLLOWER (or UNKNOWN_TOPIC_OR_PARTITION).
	LeaderEpoch(tp log.TopicPartition) (int32, error)
	// Read reads whole batches from offset, at most maxBytes (but at
	// least one batch), up to the high watermark, or the last stable
	// offset when readCommitted.
	Read(tp log.TopicPartition, offset int64, maxBytes int32, readCommitted bool) (ReadResult, error)
	// OffsetForTimestamp is ListOffsets' answer for a consumer: -2 the
	// log start, -1 the high watermark, else the first offset at or after
	// the timestamp (-1 if none).
	OffsetForTimestamp(tp log.TopicPartition, ts int64) (int64, error)
	// WaitForData calls done once any of tps has data past its offset,
	// or maxWait has passed (Kafka's DelayedFetch).
	WaitForData(tps []WaitPartition, maxWait time.Duration, done func())
}

// WaitPartition is a partition a share fetch waits on and where it reads
// from.
type WaitPartition struct {
	TP     log.TopicPartition
	Offset int64
}

// ReadResult is one read of a partition: its batches' bounds and their
// bytes as a file slice (sent without copying).
type ReadResult struct {
	Batches        []Batch
	Records        log.FileSlice
	LogStartOffset int64
	// AbortedTransactions are, for a read_committed read, the aborted
	// transactions overlapping the batches.
	AbortedTransactions []log.AbortedTxn
}

// ReplicaLog is the Log of a ReplicaManager.
type ReplicaLog struct{ Replicas *replica.Manager }

func (l ReplicaLog) LeaderEpoch(tp log.TopicPartition) (int32, error) {
	p := l.Replicas.Partition(tp)
	if p == nil {
		return -1, kerr.UnknownTopicOrPartition
	}
	if !p.IsLeader() {
		return -1, kerr.NotLeaderForPartition
	}
	return p.LeaderEpoch(), nil
}

func (l ReplicaLog) Read(tp log.TopicPartition, offset int64, maxBytes int32, readCommitted bool) (ReadResult, error) {
	params := replica.FetchParams{ReplicaID: -1, ReplicaEpoch: -1, MaxBytes: maxBytes, ReadCommitted: readCommitted}
	part := replica.FetchPartition{TopicPartition: tp, FetchOffset: offset, MaxBytes: maxBytes, CurrentLeaderEpoch: -1, LogStartOffset: -1}
	var res replica.FetchResult
	l.Replicas.FetchMessages(params, []replica.FetchPartition{part}, func(rs []replica.FetchResult) { res = rs[0] })
	if res.Err != nil {
		return ReadResult{LogStartOffset: res.LogStartOffset}, res.Err
	}
	batches, err := batchBounds(res.Records)
	if err != nil {
		return ReadResult{}, err
	}
	return ReadResult{Batches: batches, Records: res.Records, LogStartOffset: res.LogStartOffset, AbortedTransactions: res.AbortedTransactions}, nil
}

func (l ReplicaLog) OffsetForTimestamp(tp log.TopicPartition, ts int64) (int64, error) {
	to, err := l.Replicas.ListOffset(tp, -1, ts, 0, -1)
	return to.Offset, err
}

func (l ReplicaLog) WaitForData(tps []WaitPartition, maxWait time.Duration, done func()) {
	params := replica.FetchParams{ReplicaID: -1, ReplicaEpoch: -1, MaxWait: maxWait, MinBytes: 1, MaxBytes: 1}
	parts := make([]replica.FetchPartition, len(tps))
	for i, w := range tps {
		parts[i] = replica.FetchPartition{TopicPartition: w.TP, FetchOffset: w.Offset, MaxBytes: 1, CurrentLeaderEpoch: -1, LogStartOffset: -1}
	}
	l.Replicas.FetchMessages(params, parts, func([]replica.FetchResult) { done() })
}

// batchBounds reads the header of every batch in fs: a pread of the fixed
// header per batch, nothing per record.
func batchBounds(fs log.FileSlice) ([]Batch, error) {
	var out []Batch
	hdr := make([]byte, log.BatchHeaderSize)
	for pos := int64(0); pos < fs.Size; {
		if fs.Size-pos < log.BatchHeaderSize {
			break // a partial batch at the end of a size-limited read
		}
		b, err := fs.Sub(pos, log.BatchHeaderSize).ReadInto(hdr[:0])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("share fetch: reading a batch header: %w", err)
		}
		h, err := log.ParseBatchHeader(b)
		if err != nil {
			return nil, err
		}
		if pos+int64(h.TotalSize()) > fs.Size {
			break
		}
		out = append(out, Batch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), pos: pos, size: int64(h.TotalSize()),
			producerID: h.ProducerID, transactional: h.IsTransactional(), control: h.IsControl()})
		pos += int64(h.TotalSize())
	}
	return out, nil
}

// abortedOffsets are the offset ranges of the batches of aborted
// transactions among a read_committed read's (Kafka's consumers skip the
// same ones): a transactional batch of a producer whose aborted
// transaction began at or before it, until that producer's abort marker.
func abortedOffsets(batches []Batch, aborted []log.AbortedTxn) []AcquiredRecords {
	if len(aborted) == 0 {
		return nil
	}
	sorted := slices.SortedFunc(slices.Values(aborted), func(a, b log.AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	open := map[int64]bool{}
	var out []AcquiredRecords
	for _, b := range batches {
		for len(sorted) > 0 && sorted[0].FirstOffset <= b.LastOffset {
			open[sorted[0].ProducerID] = true
			sorted = sorted[1:]
		}
		switch {
		case b.control:
			// A marker ends its producer's transaction: an aborted
			// one ends with its ABORT.
			delete(open, b.producerID)
		case b.transactional && open[b.producerID]:
			out = append(out, AcquiredRecords{FirstOffset: b.BaseOffset, LastOffset: b.LastOffset})
		}
	}
	return out
}

// subtract is acq without the offsets of cut (both ordered).
func subtract(acq, cut []AcquiredRecords) []AcquiredRecords {
	var out []AcquiredRecords
	for _, a := range acq {
		for _, c := range cut {
			if c.LastOffset < a.FirstOffset || c.FirstOffset > a.LastOffset {
				continue
			}
			if c.FirstOffset > a.FirstOffset {
				out = append(out, AcquiredRecords{FirstOffset: a.FirstOffset, LastOffset: c.FirstOffset - 1, DeliveryCount: a.DeliveryCount})
			}
			a.FirstOffset = c.LastOffset + 1
		}
		if a.FirstOffset <= a.LastOffset {
			out = append(out, a)
		}
	}
	return out
}
