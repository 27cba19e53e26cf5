package console

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/uuid"
)

// Bounds of reading the newest records' shape (the lanes' cells).
const (
	// maxCells is how many of a partition's newest offsets are read.
	maxCells = 32
	// cellsPartitionBytes is a Fetch's partition_max_bytes, and
	// cellsTickBytes the sum of max_bytes over a tick's Fetch requests
	// (split evenly between the leaders asked).
	cellsPartitionBytes = 32 << 10
	cellsTickBytes      = 1 << 20
	// maxCellReads bounds the partitions read per tick: those whose
	// offsets moved first, then the ones unchanged the longest, each
	// group the one read longest ago first. With 100 topics of 10
	// partitions under a produce trickle to every topic, 200 a tick added
	// about 2 % of a broker core (one run); 100 a tick added nothing
	// measurable over the console without cells (two runs, see README).
	maxCellReads = 100
	// cellsRefresh is how many ticks an unchanged partition goes unread
	// (compaction changes records without moving any offset).
	cellsRefresh = 60
	// maxCellPartitions: a cluster with more partitions gets no cells.
	maxCellPartitions = 5000
	// cellColours is how many colours the keys are hashed onto.
	cellColours = 8
)

// cellsState is what the poller remembers of a partition's last read.
type cellsState struct {
	key  cellsKey
	tick int
}

// cellsKey changes exactly when a partition's records must be read again.
type cellsKey struct {
	start, hw   int64
	leader      int32
	leaderEpoch int32
}

// cellsRead is one partition to read.
type cellsRead struct {
	tp
	topicID     [16]byte
	from, hw    int64
	leaderEpoch int32
}

// pollRecords fills each partition's Records: partitions whose offsets or
// leader changed since their last read, and the ones read longest ago,
// are read with a Fetch (read_uncommitted, from at most maxCells before
// the high watermark) and an OffsetForLeaderEpoch, both sent to the
// leader; the rest keep prev's Records.
func (p *Poller) pollRecords(ctx context.Context, s, prev *Snapshot) error {
	if p.cells == nil {
		p.cells = map[tp]cellsState{}
	}
	total := 0
	for _, t := range s.Topics {
		total += len(t.Partitions)
	}
	if total > maxCellPartitions {
		s.Truncated["records"] = total
		clear(p.cells)
		return nil
	}
	prevPart := partitionIndex(prev)
	var changed, stale []cellsRead
	seen := make(map[tp]bool, total)
	for ti := range s.Topics {
		t := &s.Topics[ti]
		id, _ := uuid.Parse(t.ID)
		for pi := range t.Partitions {
			pt := &t.Partitions[pi]
			k := tp{t.Name, pt.Partition}
			seen[k] = true
			if pt.HighWatermark <= pt.LogStartOffset || pt.LogStartOffset < 0 {
				delete(p.cells, k) // empty or unknown: nothing to draw
				continue
			}
			if old := prevPart[k]; old != nil {
				pt.Records = old.Records
			}
			if pt.Leader < 0 {
				continue // no leader to ask: the last cells stay
			}
			r := cellsRead{tp: k, topicID: id, from: max(pt.LogStartOffset, pt.HighWatermark-maxCells), hw: pt.HighWatermark, leaderEpoch: pt.LeaderEpoch}
			st, ok := p.cells[k]
			switch key := (cellsKey{pt.LogStartOffset, pt.HighWatermark, pt.Leader, pt.LeaderEpoch}); {
			case !ok || st.key != key:
				changed = append(changed, r)
			case p.tick-st.tick >= cellsRefresh:
				stale = append(stale, r)
			}
		}
	}
	for k := range p.cells {
		if !seen[k] {
			delete(p.cells, k)
		}
	}
	// Read longest ago (or never) first, so that under the cap every
	// partition that keeps changing gets its turn.
	lastRead := func(r cellsRead) int {
		if st, ok := p.cells[r.tp]; ok {
			return st.tick
		}
		return -1
	}
	byAge := func(a, b cellsRead) int { return lastRead(a) - lastRead(b) }
	slices.SortStableFunc(changed, byAge)
	slices.SortFunc(stale, byAge)
	reads := append(changed, stale...)
	reads = reads[:min(len(reads), maxCellReads)]
	if len(reads) == 0 {
		return nil
	}
	byLeader := map[int32][]cellsRead{}
	idx := partitionIndex(s)
	for _, r := range reads {
		l := idx[r.tp].Leader
		byLeader[l] = append(byLeader[l], r)
	}
	budget := int32(cellsTickBytes / len(byLeader))
	var errs []error
	for leader, rs := range byLeader {
		got, err := p.readRecords(ctx, leader, rs, budget)
		if err != nil {
			errs = append(errs, err)
		}
		for _, r := range rs {
			rec, ok := got[r.tp]
			if !ok {
				continue // not answered: read again next tick
			}
			pt := idx[r.tp]
			if rec.LogEnd < 0 && pt.Records != nil && pt.Records.LogEnd >= pt.HighWatermark {
				// OffsetForLeaderEpoch failed: the last log end still
				// holds as far as anyone can tell, and dropping it would
				// draw a truncation that did not happen.
				rec.LogEnd = pt.Records.LogEnd
			}
			pt.Records = rec
			p.cells[r.tp] = cellsState{key: cellsKey{pt.LogStartOffset, pt.HighWatermark, pt.Leader, pt.LeaderEpoch}, tick: p.tick}
		}
	}
	return errors.Join(errs...)
}

// readRecords asks one leader for the shape of rs' newest records and
// its log end offsets. A partition is in the answer only when its Fetch
// returned records or none were due.
//
// A Fetch answers a partition from one segment only (as Kafka's does), so
// a partition whose answer stops short of the high watermark with room
// to spare is asked again from where it stopped, at most maxFetchRounds
// times in all and maxBytes over all of them.
func (p *Poller) readRecords(ctx context.Context, leader int32, rs []cellsRead, maxBytes int32) (map[tp]*Records, error) {
	br := p.cl.Broker(int(leader))
	logEnd, eerr := p.leaderLogEnds(ctx, br, rs)
	raw := map[tp][]byte{} // the record batches read, over all rounds
	at := map[tp]int64{}   // where the next round reads from
	for _, r := range rs {
		at[r.tp] = r.from
	}
	var first error
	left := maxBytes // over all rounds
	for round := 0; round < maxFetchRounds && len(at) > 0 && left > 0; round++ {
		answers, err := fetchShapes(ctx, br, rs, at, left)
		if err != nil {
			first = cmp.Or(first, err)
			break
		}
		next := map[tp]int64{}
		for _, r := range rs {
			rp, ok := answers[r.tp]
			if !ok {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				first = cmp.Or(first, err)
				continue
			}
			raw[r.tp] = append(raw[r.tp], rp.RecordBatches...)
			left -= int32(len(rp.RecordBatches))
			end := batchesEnd(rp.RecordBatches)
			if end > at[r.tp] && end < r.hw && len(rp.RecordBatches) < cellsPartitionBytes/2 {
				next[r.tp] = end // the end of a segment: the rest is in the next one
			}
		}
		at = next
	}
	out := map[tp]*Records{}
	for _, r := range rs {
		b, ok := raw[r.tp]
		if !ok && r.hw > r.from {
			continue
		}
		rec := recordsShape(r.from, r.hw, &kmsg.FetchResponseTopicPartition{Partition: r.partition, RecordBatches: b})
		if rec == nil {
			continue
		}
		rec.LogEnd = -1
		if e, ok := logEnd[r.tp]; ok {
			rec.LogEnd = e
		}
		out[r.tp] = rec
	}
	return out, errors.Join(first, eerr)
}

// maxFetchRounds bounds the Fetch requests readRecords sends one leader.
const maxFetchRounds = 4

// leaderLogEnds asks the leader br for the end offset of each partition's
// current leader epoch: its log end.
func (p *Poller) leaderLogEnds(ctx context.Context, br *kgo.Broker, rs []cellsRead) (map[tp]int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	want := map[tp]int32{}
	byTopic := map[string]int{}
	for _, r := range rs {
		want[r.tp] = r.leaderEpoch
		i, ok := byTopic[r.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[r.topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = r.topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = r.partition, -1, r.leaderEpoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return nil, err
	}
	out := map[tp]int64{}
	for _, t := range resp.Topics {
		for _, pt := range t.Partitions {
			k := tp{t.Topic, pt.Partition}
			// The end offset of the current epoch is the log end; of
			// another (the metadata was stale) it is not.
			if e, ok := want[k]; ok && pt.ErrorCode == 0 && pt.LeaderEpoch == e {
				out[k] = pt.EndOffset
			}
		}
	}
	return out, nil
}

// fetchShapes sends br one read_uncommitted Fetch for the partitions of rs
// in at, each from its offset there, and returns the answers by
// partition.
func fetchShapes(ctx context.Context, br *kgo.Broker, rs []cellsRead, at map[tp]int64, maxBytes int32) (map[tp]*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = maxBytes
	req.IsolationLevel = 0 // read_uncommitted: aborted records and markers too
	req.SessionID, req.SessionEpoch = 0, -1
	byTopic := map[string]int{}
	names := map[[16]byte]string{}
	for _, r := range rs {
		from, ok := at[r.tp]
		if !ok {
			continue
		}
		i, ok := byTopic[r.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[r.topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = r.topic, r.topicID // by name below v13, by id from v13
			req.Topics = append(req.Topics, t)
			names[r.topicID] = r.topic
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = r.partition, from, cellsPartitionBytes
		rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.LastFetchedEpoch = -1, -1, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[tp]*kmsg.FetchResponseTopicPartition{}
	for _, t := range resp.Topics {
		name := t.Topic
		if t.TopicID != ([16]byte{}) {
			name = names[t.TopicID]
		}
		for i := range t.Partitions {
			out[tp{name, t.Partitions[i].Partition}] = &t.Partitions[i]
		}
	}
	return out, nil
}

// recordsShape reads the shape of the offsets [from, hw) from one
// partition of a read_uncommitted Fetch answer, which holds aborted
// records and the markers. It returns nil when the
// answer holds no record batch although records were due (the fetch's
// byte budget ran out before this partition).
func recordsShape(from, hw int64, rp *kmsg.FetchResponseTopicPartition) *Records {
	n := int(hw - from)
	if n <= 0 {
		return &Records{From: from}
	}
	covered := batchesEnd(rp.RecordBatches)
	if covered <= from {
		return nil
	}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		KeepControlRecords: true, Offset: from, Topic: "", Partition: rp.Partition,
	}, rp, kgo.DefaultDecompressor(), nil)
	shape := []byte(strings.Repeat("?", n))
	keys := []byte(strings.Repeat("-", n))
	for i := range min(int(covered-from), n) {
		shape[i] = '_' // read, and no record there: compacted away
	}
	// A transactional record belongs to its producer's next marker: read
	// backwards, each producer's last marker seen is that one. (Kafka
	// sends aborted_transactions only to read_committed fetches, which
	// stop at the last stable offset; a record whose marker is past the
	// high watermark is in an open transaction and drawn as a record.)
	next := map[int64]byte{}
	for _, r := range slices.Backward(fp.Records) {
		i := int(r.Offset - from)
		if i < 0 || i >= n {
			continue
		}
		if r.Attrs.IsControl() {
			shape[i] = 'A'
			if len(r.Key) >= 4 && binary.BigEndian.Uint16(r.Key[2:]) == 1 {
				shape[i] = 'C'
			}
			next[r.ProducerID] = shape[i]
			continue
		}
		switch {
		case r.Attrs.IsTransactional() && next[r.ProducerID] == 'A':
			shape[i] = 'a'
		case r.Value == nil:
			shape[i] = 't'
		default:
			shape[i] = 'r'
		}
		if r.Key != nil {
			h := fnv.New32a()
			h.Write(r.Key)
			keys[i] = byte('0' + h.Sum32()%cellColours)
		}
	}
	end := len(shape)
	for end > 0 && shape[end-1] == '?' {
		end--
	}
	return &Records{From: from, Shape: string(shape[:end]), Keys: string(keys[:end])}
}

// batchesEnd is the offset after the last whole record batch in b (0
// when there is none): the batches' headers say which offsets they cover,
// including records compaction removed from them.
func batchesEnd(b []byte) int64 {
	var end int64
	for len(b) >= 27 {
		base := int64(binary.BigEndian.Uint64(b))
		size := int(int32(binary.BigEndian.Uint32(b[8:])))
		if size < 15 || 12+size > len(b) {
			break // a partial batch at the end of the answer
		}
		if b[16] == 2 { // magic v2: last_offset_delta at byte 23
			end = max(end, base+int64(int32(binary.BigEndian.Uint32(b[23:])))+1)
		} else { // older message sets: the offset is the last inner one's
			end = max(end, base+1)
		}
		b = b[12+size:]
	}
	return end
}
