package replica

import (
	"time"

	"github.com/moldau/moldau/log"
)

// AppendAsCoordinator appends batch (one record batch built by a
// coordinator runtime) to tp as its leader, with Kafka's
// AppendOrigin.COORDINATOR, which may write the internal topics, and calls
// done once the high watermark has passed the batch (acks=all), with the
// batch's base offset, or with an error (the append failed, or no commit
// within timeout: REQUEST_TIMED_OUT). done may run before this returns.
func (m *Manager) AppendAsCoordinator(tp TopicPartition, batch []byte, timeout time.Duration, done func(baseOffset int64, err error)) {
	m.appendRecords(timeout, -1, log.AppendOptions{Origin: log.AppendOriginCoordinator}, []ProduceEntry{{TopicPartition: tp, Records: batch}}, func(rs []ProduceResult) {
		done(rs[0].BaseOffset, rs[0].Err)
	})
}

// ReadForCoordinator reads whole batches of tp from the batch holding
// offset (or from the log start if offset is below it) up to the log end,
// at most maxBytes but at least one batch, for a coordinator loading its
// shard; it returns them with the log start and end offsets.
func (m *Manager) ReadForCoordinator(tp TopicPartition, offset int64, maxBytes int32) ([]byte, int64, int64, error) {
	p, err := m.getPartition(tp)
	if err != nil {
		return nil, -1, -1, err
	}
	l := p.Log
	start, end := l.LogStartOffset(), l.LogEndOffset()
	if offset < start {
		offset = start
	}
	if offset >= end {
		return nil, start, end, nil
	}
	data, err := l.Read(offset, maxBytes, end, true)
	if err != nil {
		return nil, start, end, err
	}
	buf, err := data.Records.ReadInto(nil)
	return buf, start, end, err
}
