package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// Bounds of following the metadata log.
const (
	// metadataBacklog is how many records before the high watermark the
	// console starts from when the log holds more.
	metadataBacklog = 200
	// metadataFetchBytes bounds one Fetch's answer; one is in flight at
	// a time and one answer is taken a tick.
	metadataFetchBytes = 256 << 10
	// maxControllerClients bounds the connections kept to controllers
	// (the bootstrap ones and the leaders answers named).
	maxControllerClients = 16
)

// metadataTopicID is __cluster_metadata's topic id (Kafka's
// Uuid.METADATA_TOPIC_ID), which Fetch v13+ names it by.
var metadataTopicID = [16]byte{15: 1}

// metaResult is one Fetch's answer, from the controller at addr.
type metaResult struct {
	addr string
	resp *kmsg.FetchResponse
	err  error
}

// metaReader follows __cluster_metadata-0 from the active controller's
// listener with Fetch, as a read-only observer with no replica id (see
// "The metadata log" in doc.go). It is owned by the polling goroutine;
// its one Fetch in flight runs on a goroutine of its own, which close
// stops and waits for.
type metaReader struct {
	bootstrap []string
	opts      []kgo.Opt
	clients   map[string]*kgo.Client
	boot      int    // the bootstrap controller to try next
	addr      string // the controller to fetch from; "" a bootstrap one
	// leaderEpoch is the quorum's epoch as last answered; offset the
	// next offset to fetch and lastEpoch the epoch of the batch before
	// it (Kafka checks the pair against its log).
	leaderEpoch int32
	offset      int64
	lastEpoch   int32
	started     bool                 // the backlog's start is decided
	backlog     int64                // 0: metadataBacklog (tests set fewer)
	names       map[uuid.UUID]string // the TopicRecords read

	inflight chan metaResult // the Fetch in flight, nil when none
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// pollMetadataLog takes the answer of the Fetch in flight, if it came
// (never waiting for it), and decodes its records into events; then
// sends the next Fetch. Nothing without --bootstrap-controller.
func (p *Poller) pollMetadataLog(s *Snapshot) ([]InternalEvent, error) {
	m := &p.meta
	if len(m.bootstrap) == 0 {
		return nil, nil
	}
	var got []InternalEvent
	var err error
	if m.inflight != nil {
		select {
		case res := <-m.inflight:
			m.inflight = nil
			got, err = m.handle(res, s)
		default:
			return nil, nil
		}
	}
	if m.inflight == nil {
		if serr := m.send(p.timeout, min(max(p.interval, 100*time.Millisecond), 500*time.Millisecond)); err == nil {
			err = serr
		}
	}
	return got, err
}

// send starts the next Fetch, waiting at most wait for records, on a
// goroutine of its own.
func (m *metaReader) send(timeout, wait time.Duration) error {
	addr := m.addr
	if addr == "" {
		addr = m.bootstrap[m.boot%len(m.bootstrap)]
	}
	cl, err := m.client(addr)
	if err != nil {
		m.next()
		return err
	}
	req := kmsg.NewPtrFetchRequest()
	// No replica id (-1, v15+ in ReplicaState): a fetcher that is not a
	// replica, as a consumer. Kafka's leader (LeaderState.updateReplicaState)
	// and Moldau's keep no state for it: it is counted toward nothing and
	// not listed among DescribeQuorum's observers.
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -1, -1, -1
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	req.MinBytes, req.MaxBytes = 1, metadataFetchBytes
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = metadataTopic, metadataTopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.LastFetchedEpoch = m.offset, m.lastEpoch
	rp.CurrentLeaderEpoch = max(m.leaderEpoch, m.lastEpoch) // Kafka: never below the last fetched epoch
	rp.PartitionMaxBytes = metadataFetchBytes
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)

	ctx, cancel := context.WithTimeout(context.Background(), timeout+wait)
	ch := make(chan metaResult, 1)
	m.inflight, m.cancel = ch, cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		r, err := cl.SeedBrokers()[0].Request(ctx, req)
		res := metaResult{addr: addr, err: err}
		if err == nil {
			res.resp = r.(*kmsg.FetchResponse)
		}
		ch <- res
	}()
	return nil
}

// client is the kgo client of the controller at addr.
func (m *metaReader) client(addr string) (*kgo.Client, error) {
	if cl, ok := m.clients[addr]; ok {
		return cl, nil
	}
	if len(m.clients) >= maxControllerClients {
		m.closeClients()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("moldau-console")}, m.opts...)...)
	if err != nil {
		return nil, err
	}
	if m.clients == nil {
		m.clients = map[string]*kgo.Client{}
	}
	m.clients[addr] = cl
	return cl, nil
}

// next makes the next Fetch go to the next bootstrap controller.
func (m *metaReader) next() {
	if m.addr == "" {
		m.boot++
	}
	m.addr = ""
}

// handle reads one Fetch answer: the records below its high watermark
// as events (Kafka's leader answers past it, uncommitted), or where to
// fetch next: the leader it names, the end of the snapshot it names, the
// backlog's start.
func (m *metaReader) handle(res metaResult, s *Snapshot) ([]InternalEvent, error) {
	if res.err != nil {
		m.next()
		return nil, fmt.Errorf("%s: %w", res.addr, res.err)
	}
	resp := res.resp
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		m.next()
		return nil, fmt.Errorf("%s: %w", res.addr, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		m.next()
		return nil, fmt.Errorf("%s: an answer without __cluster_metadata-0", res.addr)
	}
	rp := &resp.Topics[0].Partitions[0]
	m.addr = res.addr
	if l := rp.CurrentLeader; l.LeaderID >= 0 && l.LeaderEpoch >= m.leaderEpoch {
		m.leaderEpoch = l.LeaderEpoch
	}
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case errors.Is(err, kerr.NotLeaderForPartition):
		if m.addr = leaderAddr(resp, rp.CurrentLeader.LeaderID); m.addr == "" {
			m.next()
		}
		return nil, nil // not a failure: the next Fetch goes to the leader
	case errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.UnknownLeaderEpoch):
		// The epoch is learnt: ask again, the leader if it is named (a
		// Kafka controller checks the epoch before whether it leads).
		if a := leaderAddr(resp, rp.CurrentLeader.LeaderID); a != "" {
			m.addr = a
		}
		return nil, nil
	case errors.Is(err, kerr.UnknownTopicID), errors.Is(err, kerr.UnknownTopicOrPartition):
		m.next()
		return nil, fmt.Errorf("%s: %w (is it a controller listener?)", res.addr, err)
	case err != nil:
		m.next()
		return nil, fmt.Errorf("%s: %w", res.addr, err)
	}
	if rp.SnapshotID.EndOffset >= 0 && rp.SnapshotID.Epoch >= 0 {
		// Below the log start: skip the snapshot rather than fetch it.
		m.offset, m.lastEpoch = rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch
		m.startNear(rp)
		return nil, nil
	}
	if rp.DivergingEpoch.EndOffset >= 0 && rp.DivergingEpoch.Epoch >= 0 {
		// The pair did not match the leader's log (Kafka): go on from
		// where its epoch ends.
		m.offset, m.lastEpoch = min(m.offset, rp.DivergingEpoch.EndOffset), rp.DivergingEpoch.Epoch
		return nil, nil
	}
	if m.startNear(rp) {
		return nil, nil
	}
	return m.decode(rp, s), nil
}

// leaderAddr is the endpoint an answer gives the leader (NodeEndpoints,
// Fetch v16+), "" when it names none.
func leaderAddr(resp *kmsg.FetchResponse, leader int32) string {
	for _, b := range resp.Brokers {
		if b.NodeID == leader && leader >= 0 {
			return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
	}
	return ""
}

// startNear decides, on the first answer, where the events start: at
// most metadataBacklog records before the high watermark (above the log
// start), fetched with the leader's epoch, which Kafka takes as the last
// fetched epoch of any offset of its log. It reports whether it moved.
func (m *metaReader) startNear(rp *kmsg.FetchResponseTopicPartition) bool {
	if m.started {
		return false
	}
	m.started = true
	backlog := m.backlog
	if backlog <= 0 {
		backlog = metadataBacklog
	}
	from := rp.HighWatermark - backlog
	if from <= m.offset || from <= rp.LogStartOffset {
		return false
	}
	m.offset, m.lastEpoch = from, m.leaderEpoch
	return true
}

// decode turns the answer's whole batches below the high watermark into
// events and moves the fetch offset past them.
func (m *metaReader) decode(rp *kmsg.FetchResponseTopicPartition, s *Snapshot) []InternalEvent {
	batches, end, epoch := committedBatches(rp.RecordBatches, rp.HighWatermark)
	if end <= m.offset {
		return nil
	}
	from := m.offset
	m.offset, m.lastEpoch = end, epoch
	cut := *rp
	cut.RecordBatches = batches
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: from, Topic: metadataTopic}, &cut, kgo.DefaultDecompressor(), nil)
	ids := topicIDs(s)
	names := func(id uuid.UUID) (string, bool) {
		if n, ok := m.names[id]; ok {
			return n, true
		}
		n, ok := ids[id]
		return n, ok
	}
	var got []InternalEvent
	for _, r := range fp.Records {
		e := decodeMetadata(r.Value, names)
		if id, name, ok := topicRecord(r.Value); ok {
			if m.names == nil {
				m.names = map[uuid.UUID]string{}
			}
			m.names[id] = name
		}
		e.Time, e.Topic, e.Partition, e.Offset = r.Timestamp.UnixMilli(), metadataTopic, 0, r.Offset
		got = append(got, e)
	}
	return got
}

// topicRecord returns the id and name a TopicRecord gives a topic.
func topicRecord(value []byte) (uuid.UUID, string, bool) {
	if rec, err := metadata.Decode(value); err == nil {
		if t, ok := rec.(*metadata.TopicRecord); ok {
			return t.TopicID, t.Name, true
		}
	}
	return uuid.UUID{}, "", false
}

// committedBatches is the prefix of whole record batches in b that end
// below hw, the offset after them and the last one's partition leader
// epoch (end 0 when there is none).
func committedBatches(b []byte, hw int64) (whole []byte, end int64, epoch int32) {
	n := 0
	for rest := b; ; {
		h, err := log.ParseBatchHeader(rest)
		if err != nil || h.TotalSize() > len(rest) || h.LastOffset() >= hw {
			break // a partial batch, one at or past hw, or not a batch
		}
		end, epoch = h.NextOffset(), h.PartitionLeaderEpoch
		n += h.TotalSize()
		rest = rest[h.TotalSize():]
	}
	return b[:n], end, epoch
}

// close stops the Fetch in flight, closes the connections and forgets
// where it was (the next cluster starts over); the bootstrap list and
// client options stay.
func (m *metaReader) close() {
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	m.closeClients()
	*m = metaReader{bootstrap: m.bootstrap, opts: m.opts, backlog: m.backlog}
}

func (m *metaReader) closeClients() {
	for _, cl := range m.clients {
		cl.Close()
	}
	m.clients = nil
}
