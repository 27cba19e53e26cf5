package runtime

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/log"
)

// load replays tp from its log start to its log end into shard (Kafka's
// CoordinatorLoaderImpl) and returns the log end offset and the number of
// records replayed. Data records go to Replay with their batch's producer,
// transaction markers to ReplayEndTransactionMarker. Kafka's loader stops
// at the log end too; on one node the log end is the high watermark.
// cancelled is polled between reads.
func load[S Shard](pl PartitionLog, tp log.TopicPartition, shard S, bufBytes int32, cancelled func() bool) (end, n int64, err error) {
	var offset int64
	var scratch []byte
	for {
		if cancelled() {
			return 0, n, apierr.Errorf(kerr.NotCoordinator, "loading %s was cancelled", tp)
		}
		data, start, logEnd, err := pl.ReadForCoordinator(tp, offset, bufBytes)
		if err != nil {
			return 0, n, fmt.Errorf("reading %s at offset %d: %w", tp, offset, err)
		}
		if offset < start {
			offset = start
		}
		if offset >= logEnd {
			return logEnd, n, nil
		}
		if len(data) == 0 {
			return 0, n, fmt.Errorf("reading %s at offset %d below the log end %d returned nothing", tp, offset, logEnd)
		}
		for len(data) > 0 {
			h, err := log.ParseBatchHeader(data)
			if err != nil {
				return 0, n, fmt.Errorf("%s at offset %d: %w", tp, offset, err)
			}
			size := h.TotalSize()
			if size > len(data) {
				return 0, n, fmt.Errorf("%s: batch at offset %d is truncated", tp, h.BaseOffset)
			}
			batch := data[:size]
			data = data[size:]
			if h.NextOffset() <= offset {
				continue // the read started at the batch holding offset
			}
			var m int64
			scratch, m, err = replayBatch(shard, h, batch, scratch)
			if err != nil {
				return 0, n, fmt.Errorf("%s: replaying the batch at offset %d: %w", tp, h.BaseOffset, err)
			}
			n += m
			offset = h.NextOffset()
		}
	}
}

// replayBatch replays one batch into shard. scratch is reused for
// decompression.
func replayBatch[S Shard](shard S, h log.BatchHeader, batch, scratch []byte) ([]byte, int64, error) {
	body := batch[log.BatchHeaderSize:]
	if codec := h.Codec(); codec != log.CodecNone {
		var err error
		scratch, err = log.Decompress(scratch[:0], codec, body, 64<<20)
		if err != nil {
			return scratch, 0, err
		}
		body = scratch
	}
	it := log.NewRecordIter(body)
	var r log.Record
	var n int64
	for {
		ok, err := it.Next(&r)
		if err != nil {
			return scratch, n, err
		}
		if !ok {
			return scratch, n, nil
		}
		offset := h.BaseOffset + int64(r.OffsetDelta)
		if h.IsControl() {
			// Control record key: version int16, type int16 (0 abort,
			// 1 commit).
			if len(r.Key) < 4 {
				return scratch, n, fmt.Errorf("control record at offset %d has a %d-byte key", offset, len(r.Key))
			}
			typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
			if typ == log.ControlCommit || typ == log.ControlAbort {
				if err := shard.ReplayEndTransactionMarker(h.ProducerID, h.ProducerEpoch, typ == log.ControlCommit); err != nil {
					return scratch, n, err
				}
			}
			continue
		}
		pid := int64(-1)
		if h.IsTransactional() {
			pid = h.ProducerID
		}
		if err := shard.Replay(offset, pid, h.ProducerEpoch, r.Key, r.Value); err != nil {
			return scratch, n, fmt.Errorf("record at offset %d: %w", offset, err)
		}
		n++
	}
}
