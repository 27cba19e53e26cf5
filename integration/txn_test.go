package integration

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

// rawConn sends kmsg requests at a chosen version on one connection.
type rawConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
}

func newRawConn(t testing.TB, addr string) *rawConn { return &rawConn{t: t, c: dial(t, addr)} }

// do sends req at version and decodes the response.
func (r *rawConn) do(req kmsg.Request, version int16) kmsg.Response {
	r.t.Helper()
	req.SetVersion(version)
	r.corr++
	writeFrame(r.t, r.c, frame(req.Key(), version, r.corr, req.AppendTo(nil)))
	corr, body := readFrame(r.t, r.c)
	if corr != r.corr {
		r.t.Fatalf("correlation id %d, want %d", corr, r.corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if resp.IsFlexible() {
		body = body[1:] // empty response header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("%s v%d response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp
}

// txnRecords builds one batch of values for a producer (pid < 0: plain).
func txnRecordBatch(t testing.TB, pid int64, epoch int16, seq int32, transactional bool, values ...string) []byte {
	t.Helper()
	b := log.NewBatchBuilder(0)
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, epoch, seq, transactional
	}
	for _, v := range values {
		b.Add(time.Now().UnixMilli(), nil, []byte(v))
	}
	out, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// produceRaw sends one batch with Produce v11 (acks=all) and returns the
// partition's answer.
func (r *rawConn) produceRaw(topic string, txnID *string, records []byte) kmsg.ProduceResponseTopicPartition {
	r.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := r.do(req, 11).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

type markerSpec struct {
	pid        int64
	epoch      int16
	commit     bool
	coordEpoch int32
	tv         int8
	topic      string
	partitions []int32
}

// writeMarkers sends WriteTxnMarkers at version and returns the error
// code per (producer id, partition).
func (r *rawConn) writeMarkers(version int16, specs ...markerSpec) map[int64]map[int32]int16 {
	r.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for _, s := range specs {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = s.pid, s.epoch, s.commit, s.coordEpoch, s.tv
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = s.topic, s.partitions
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
	}
	resp := r.do(req, version).(*kmsg.WriteTxnMarkersResponse)
	out := make(map[int64]map[int32]int16)
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if out[m.ProducerID] == nil {
					out[m.ProducerID] = make(map[int32]int16)
				}
				out[m.ProducerID][p.Partition] = p.ErrorCode
			}
		}
	}
	return out
}

func (r *rawConn) fetchRaw(topic string, offset int64, isolation int8) kmsg.FetchResponseTopicPartition {
	r.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch, req.IsolationLevel = -1, 1<<20, -1, isolation
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := r.do(req, 11).(*kmsg.FetchResponse)
	return resp.Topics[0].Partitions[0]
}

func (r *rawConn) listLatest(topic string, isolation int8) int64 {
	r.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := r.do(req, 7).(*kmsg.ListOffsetsResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		r.t.Fatalf("ListOffsets: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// batchesEnd is the offset after the last batch of a fetch's records.
func batchesEnd(t testing.TB, b []byte) int64 {
	t.Helper()
	end := int64(-1)
	for len(b) > 0 {
		h, err := log.ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		end = h.NextOffset()
		b = b[h.TotalSize():]
	}
	return end
}

// consumeValues reads the topic from the start with isolation until n
// records arrived, and returns their values in order.
func consumeValues(t testing.TB, seed, topic string, isolation kgo.IsolationLevel, n int) []string {
	t.Helper()
	cl := newClient(t, seed, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(isolation), kgo.FetchMaxWait(200*time.Millisecond))
	ctx := ctxTimeout(t, 30*time.Second)
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %q, want %d records: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestTransactionMarkersOverTCP: transactional batches of three producers
// (built with log.BatchBuilder, ids and epochs of the test's choosing, as
// the transaction coordinator does not exist yet) interleaved with plain
// records, ended with WriteTxnMarkers. A franz-go read_committed consumer
// sees exactly the committed and plain records, stopping at the open
// transaction until its COMMIT; read_uncommitted sees all. The raw
// answers carry the LSO, the aborted transactions, ListOffsets latest by
// isolation, DescribeProducers, and the marker errors of every version.
func TestTransactionMarkersOverTCP(t *testing.T) {
	// The producers here have no transaction coordinator behind them:
	// without verification (KIP-890) their batches are taken as they come.
	b := startBroker(t, "", "transaction.partition.verification.enable=false")
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, "txn"); err != nil {
		t.Fatal(err)
	}
	rc := newRawConn(t, b.Seed())
	tid := "app-1"
	produce := func(pid int64, seq int32, txn bool, values ...string) int64 {
		t.Helper()
		var id *string
		if txn {
			id = &tid
		}
		p := rc.produceRaw("txn", id, txnRecordBatch(t, pid, 0, seq, txn, values...))
		if p.ErrorCode != 0 {
			t.Fatalf("produce %v: %v", values, kerr.ErrorForCode(p.ErrorCode))
		}
		return p.BaseOffset
	}
	const a, bb, c = 5001, 5002, 5003
	produce(a, 0, true, "a0", "a1") // 0-1
	produce(-1, 0, false, "p0")     // 2
	produce(bb, 0, true, "b0")      // 3
	produce(a, 2, true, "a2")       // 4
	produce(-1, 0, false, "p1")     // 5
	errs := rc.writeMarkers(1,
		markerSpec{pid: a, commit: true, coordEpoch: 1, topic: "txn", partitions: []int32{0}},
		markerSpec{pid: bb, commit: false, coordEpoch: 1, topic: "txn", partitions: []int32{0}})
	if errs[a][0] != 0 || errs[bb][0] != 0 {
		t.Fatalf("markers: %v", errs)
	}
	produce(c, 0, true, "c0")   // 8, left open
	produce(-1, 0, false, "p2") // 9

	com := rc.fetchRaw("txn", 0, 1)
	if com.ErrorCode != 0 || com.HighWatermark != 10 || com.LastStableOffset != 8 || batchesEnd(t, com.RecordBatches) != 8 {
		t.Fatalf("read_committed fetch: err %d hw %d LSO %d, records to %d", com.ErrorCode, com.HighWatermark, com.LastStableOffset, batchesEnd(t, com.RecordBatches))
	}
	if len(com.AbortedTransactions) != 1 || com.AbortedTransactions[0].ProducerID != bb || com.AbortedTransactions[0].FirstOffset != 3 {
		t.Fatalf("aborted transactions %+v, want producer %d from 3", com.AbortedTransactions, bb)
	}
	unc := rc.fetchRaw("txn", 0, 0)
	if unc.AbortedTransactions != nil || unc.LastStableOffset != 8 || batchesEnd(t, unc.RecordBatches) != 10 {
		t.Fatalf("read_uncommitted fetch: aborted %#v, LSO %d, records to %d", unc.AbortedTransactions, unc.LastStableOffset, batchesEnd(t, unc.RecordBatches))
	}
	if got := rc.fetchRaw("txn", 8, 1); got.AbortedTransactions == nil || len(got.AbortedTransactions) != 0 || len(got.RecordBatches) != 0 {
		t.Fatalf("read_committed fetch at the LSO: aborted %#v, %d bytes", got.AbortedTransactions, len(got.RecordBatches))
	}
	if lso, hw := rc.listLatest("txn", 1), rc.listLatest("txn", 0); lso != 8 || hw != 10 {
		t.Fatalf("ListOffsets latest: read_committed %d, read_uncommitted %d; want 8 and 10", lso, hw)
	}
	lag := `kafka_cluster_partition_laststableoffsetlag{partition="0",topic="txn"}`
	if v, ok := scrape(t, b.MetricsAddr().String())[lag]; !ok || v != 2 {
		t.Fatalf("%s = %v (present %v), want 2", lag, v, ok)
	}

	// DescribeProducers.
	dreq := kmsg.NewPtrDescribeProducersRequest()
	for _, name := range []string{"txn", "nope", "bad/name"} {
		dt := kmsg.NewDescribeProducersRequestTopic()
		dt.Topic, dt.Partitions = name, []int32{0}
		dreq.Topics = append(dreq.Topics, dt)
	}
	dresp := rc.do(dreq, 0).(*kmsg.DescribeProducersResponse)
	dp := dresp.Topics[0].Partitions[0]
	var pids []int64
	for _, p := range dp.ActiveProducers {
		pids = append(pids, p.ProducerID)
		if p.ProducerID == c && (p.CurrentTxnStartOffset != 8 || p.LastSequence != 0) {
			t.Fatalf("producer %d: %+v", c, p)
		}
		if p.ProducerID == a && (p.CoordinatorEpoch != 1 || p.CurrentTxnStartOffset != -1 || p.LastSequence != 2) {
			t.Fatalf("producer %d: %+v", a, p)
		}
	}
	if dp.ErrorCode != 0 || !slices.Equal(pids, []int64{a, bb, c}) {
		t.Fatalf("DescribeProducers: err %d, producers %v", dp.ErrorCode, pids)
	}
	if e := dresp.Topics[1].Partitions[0].ErrorCode; e != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("DescribeProducers of an unknown topic: %v", kerr.ErrorForCode(e))
	}
	if p := dresp.Topics[2].Partitions[0]; p.ErrorCode != kerr.InvalidTopicException.Code || p.ErrorMessage == nil {
		t.Fatalf("DescribeProducers of an invalid topic: %v %v", kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage)
	}

	// Marker errors, at every version.
	for v := int16(0); v <= 2; v++ {
		got := rc.writeMarkers(v,
			markerSpec{pid: 7001, commit: true, topic: "nope", partitions: []int32{0}},
			markerSpec{pid: a, commit: true, coordEpoch: 0, topic: "txn", partitions: []int32{0}},
			markerSpec{pid: bb, epoch: -1, commit: true, coordEpoch: 9, topic: "txn", partitions: []int32{0}})
		want := map[int64]int16{7001: kerr.UnknownTopicOrPartition.Code, a: kerr.TransactionCoordinatorFenced.Code, bb: kerr.InvalidProducerEpoch.Code}
		for pid, code := range want {
			if got[pid][0] != code {
				t.Fatalf("v%d: producer %d: %v, want %v", v, pid, kerr.ErrorForCode(got[pid][0]), kerr.ErrorForCode(code))
			}
		}
	}
	// v2: a transaction version 2 marker must carry the bumped epoch.
	if got := rc.writeMarkers(2, markerSpec{pid: a, epoch: 0, commit: true, coordEpoch: 1, tv: 2, topic: "txn", partitions: []int32{0}}); got[a][0] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TV2 marker without the epoch bump: %v", kerr.ErrorForCode(got[a][0]))
	}
	// A client may not write a control batch.
	if p := rc.produceRaw("txn", &tid, log.BuildControlBatch(0, time.Now().UnixMilli(), c, 0, -1, log.ControlCommit, 1)); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("client control batch: %v", kerr.ErrorForCode(p.ErrorCode))
	}

	// franz-go consumers. read_committed stops at the open transaction.
	if got := consumeValues(t, b.Seed(), "txn", kgo.ReadCommitted(), 5); !slices.Equal(got, []string{"a0", "a1", "p0", "a2", "p1"}) {
		t.Fatalf("read_committed before C's commit: %q", got)
	}
	if errs := rc.writeMarkers(0, markerSpec{pid: c, commit: true, coordEpoch: 1, topic: "txn", partitions: []int32{0}}); errs[c][0] != 0 {
		t.Fatalf("commit C: %v", kerr.ErrorForCode(errs[c][0]))
	}
	if got := consumeValues(t, b.Seed(), "txn", kgo.ReadCommitted(), 7); !slices.Equal(got, []string{"a0", "a1", "p0", "a2", "p1", "c0", "p2"}) {
		t.Fatalf("read_committed: %q", got)
	}
	if v := scrape(t, b.MetricsAddr().String())[lag]; v != 0 {
		t.Fatalf("%s = %v after the last commit, want 0", lag, v)
	}
	if got := consumeValues(t, b.Seed(), "txn", kgo.ReadUncommitted(), 8); !slices.Equal(got, []string{"a0", "a1", "p0", "b0", "a2", "p1", "c0", "p2"}) {
		t.Fatalf("read_uncommitted: %q", got)
	}
}
