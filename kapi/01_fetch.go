package kapi

// Fetch, versions 4 to 18.
//
//   - v4: isolation_level; the response adds last_stable_offset and
//     aborted transactions. read_committed reads stop at the last stable
//     offset and carry the aborted transactions that overlap the batches
//     returned (an empty list if none); read_uncommitted's list is null.
//     (v0-3 carried magic 0/1 message sets and are not served, as in
//     Kafka 4.0, KIP-896.)
//   - v5: log_start_offset in request and response.
//   - v7: fetch sessions: session_id, session_epoch, forgotten topics
//     (KIP-227); the response adds a top-level error_code and session_id.
//   - v9: current_leader_epoch per partition (KIP-320).
//   - v11: rack_id; the response adds preferred_read_replica (KIP-392):
//     with replica.selector.class set, a leader sends a consumer in
//     another replica's rack there (no records, the offsets); from v11 a
//     consumer's fetch may be served by a follower, up to its high
//     watermark. Older consumers read from leaders only.
//   - v12: flexible versions; last_fetched_epoch; diverging epoch and
//     snapshot id (KIP-595).
//   - v13: topics named by topic ID (KIP-516); unknown ID is UNKNOWN_TOPIC_ID.
//   - v14: no change on the wire.
//   - v15: replica_id moves into the replica_state tag (KIP-903).
//   - v16: a partition answering NOT_LEADER_OR_FOLLOWER or
//     FENCED_LEADER_EPOCH carries its current leader and epoch, and
//     node_endpoints that leader's endpoint (KIP-951, leader_hints.go).
//   - v17: replica directory ID (KIP-853); v18: high watermark tag
//     (KIP-1166).
//
// Record bytes are never copied: each partition's batches are a slice of a
// segment file, spliced into the response and sent with sendfile (see
// encodeWithRegions).

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/quota"
	az "github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/replica"
)

// fetchItem is one partition to fetch, with where its answer goes.
type fetchItem struct {
	key  sessionKey
	part replica.FetchPartition
	err  error // resolution error (unknown topic ID): not fetched
	sp   *sessionPartition
}

func (h *Handler) handleFetch(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)

	replicaID := req.ReplicaID
	if req.Version >= 15 {
		replicaID = req.ReplicaState.ID
	}
	maxBytes := req.MaxBytes
	if limit := h.cfg.Broker.FetchMaxBytes; maxBytes <= 0 || maxBytes > limit {
		maxBytes = limit
	}
	// A consumer reads at most what its consumer_byte_rate allows over
	// the quota window, as Kafka's maxQuotaWindowBytes.
	fetchQuota := h.cfg.ClientQuotas.fetch()
	if replicaID >= 0 {
		fetchQuota = nil
	}
	if fetchQuota != nil {
		if v, ok := fetchQuota.MaxValueInWindow(rc.quotaUser(), rc.ClientID); ok && v < float64(maxBytes) {
			maxBytes = int32(max(v, 1))
		}
	}
	replicaEpoch := int64(-1)
	if req.Version >= 15 {
		replicaEpoch = req.ReplicaState.Epoch
	}
	params := replica.FetchParams{
		ReplicaID:     replicaID,
		ReplicaEpoch:  replicaEpoch,
		MaxWait:       time.Duration(req.MaxWaitMillis) * time.Millisecond,
		MinBytes:      min(req.MinBytes, maxBytes),
		MaxBytes:      maxBytes,
		ReadCommitted: req.IsolationLevel == 1,
	}
	if req.Version >= 11 && replicaID < 0 {
		// KIP-392: a follower may serve it, the leader may redirect it.
		params.Client = &replica.ClientMetadata{RackID: req.Rack}
	}
	sess, incremental, err := h.fetchSessionFor(req)
	if err != nil {
		resp.ErrorCode = ErrorCode(err)
		rc.finish(resp)
		return
	}
	var items []fetchItem
	if sess != nil {
		items = h.sessionFetchItems(req, sess)
		resp.SessionID = sess.id
	} else {
		items = h.fetchItems(req)
	}

	h.authorizeFetch(rc, replicaID, items)

	var parts []replica.FetchPartition
	var idx []int // parts[i] answers items[idx[i]]
	for i, it := range items {
		if it.err == nil {
			parts = append(parts, it.part)
			idx = append(idx, i)
		}
	}
	h.cfg.Replicas.FetchMessages(params, parts, func(results []replica.FetchResult) {
		byItem := make([]*replica.FetchResult, len(items))
		for i := range results {
			byItem[idx[i]] = &results[i]
		}
		if replicaID >= 0 {
			rc.q.noRequestQuota = true // a follower's fetch: a cluster action
		} else if h.throttledFetch(rc, fetchQuota, results, sess, incremental, resp) {
			rc.respond(rc.encode(resp))
			return
		}
		slices := fillFetchResponse(resp, items, byItem, sess, incremental)
		if req.Version >= 16 {
			h.addFetchLeaderHints(rc.Listener, resp)
		}
		rc.respond(rc.encodeWithRegions(resp, slices))
	})
}

// throttledFetch records a consumer fetch's record bytes against its
// consumer_byte_rate and its handler time against request_percentage;
// if either throttles, the fetch is answered with no data (Kafka's
// getThrottledResponse): the bytes are unrecorded, a new session is not
// kept, an incremental one stays as it was, and true is returned with
// resp ready.
func (h *Handler) throttledFetch(rc *RequestContext, fetchQuota *quota.ClientQuotaManager, results []replica.FetchResult, sess *fetchSession, incremental bool, resp *kmsg.FetchResponse) bool {
	if fetchQuota == nil && h.cfg.ClientQuotas.request() == nil {
		return false
	}
	var size int64
	for i := range results {
		if results[i].Err == nil {
			size += results[i].Records.Size
		}
	}
	rc.recordBandwidth(fetchQuota, float64(size))
	if rc.decideThrottle(0) == 0 {
		return false
	}
	if fetchQuota != nil {
		fetchQuota.Unrecord(rc.quotaUser(), rc.ClientID, float64(size))
	}
	resp.Topics = nil
	if sess != nil && !incremental {
		h.sessions.remove(sess.id)
		resp.SessionID = 0
	}
	return true
}

// authorizeFetch marks the items the request may not read (Kafka's
// handleFetchRequest): a follower's fetch needs CLUSTER_ACTION on the
// cluster for all of them, a consumer's READ on each topic; the others
// answer TOPIC_AUTHORIZATION_FAILED.
func (h *Handler) authorizeFetch(rc *RequestContext, replicaID int32, items []fetchItem) {
	if h.cfg.Authorizer == nil {
		return
	}
	if replicaID >= 0 {
		if h.authorize(rc, az.ClusterAction, az.Cluster, az.ClusterName) {
			return
		}
		for i := range items {
			if items[i].err == nil {
				items[i].err = errTopicAuthorization
			}
		}
		return
	}
	allowed := h.authorizeTopics(rc, az.Read, func(yield func(string) bool) {
		for i := range items {
			if items[i].err == nil && !yield(items[i].part.Topic) {
				return
			}
		}
	})
	for i := range items {
		if items[i].err == nil && !allowed[items[i].part.Topic] {
			items[i].err = errTopicAuthorization
		}
	}
}

// addFetchLeaderHints fills current_leader of the partitions that failed
// with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH and node_endpoints
// with their leaders (KIP-951, see leader_hints.go).
func (h *Handler) addFetchLeaderHints(listener string, resp *kmsg.FetchResponse) {
	var lh *leaderHints
	for ti := range resp.Topics {
		st := &resp.Topics[ti]
		for pi := range st.Partitions {
			sp := &st.Partitions[pi]
			if !wantsLeaderHint(sp.ErrorCode) {
				continue
			}
			if lh == nil {
				lh = h.leaderHints(listener)
			}
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = lh.leader(st.Topic, st.TopicID, sp.Partition)
		}
	}
	if lh == nil {
		return
	}
	for _, n := range lh.endpoints() {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = n.id, n.host, n.port, n.rack
		resp.Brokers = append(resp.Brokers, b)
	}
}

// fetchSessionFor returns the request's fetch session (KIP-227): none
// before v7 or when the request closes its session, a new one for an
// initial epoch, the cached one (incremental) otherwise.
func (h *Handler) fetchSessionFor(req *kmsg.FetchRequest) (sess *fetchSession, incremental bool, err error) {
	switch {
	case req.Version < 7:
		return nil, false, nil
	case req.SessionEpoch == finalSessionEpoch:
		if req.SessionID != 0 {
			h.sessions.remove(req.SessionID)
		}
		return nil, false, nil
	case req.SessionEpoch == initialSessionEpoch:
		if req.SessionID != 0 {
			h.sessions.remove(req.SessionID)
		}
		return h.sessions.create(), false, nil
	default:
		s, err := h.sessions.get(req.SessionID, req.SessionEpoch)
		if err != nil {
			return nil, false, err
		}
		return s, true, nil
	}
}

// sessionFetchItems applies the request's partitions and forgotten topics
// to the session and returns every partition of the session to fetch.
func (h *Handler) sessionFetchItems(req *kmsg.FetchRequest, sess *fetchSession) []fetchItem {
	useIDs := req.Version >= 13
	var items []fetchItem
	sess.mu.Lock()
	defer sess.mu.Unlock()
	for _, rt := range req.Topics {
		name, terr := h.fetchTopicName(useIDs, rt.Topic, rt.TopicID)
		for _, rp := range rt.Partitions {
			k := sessionKey{id: rt.TopicID, topic: name, partition: rp.Partition}
			if !useIDs {
				k.id = [16]byte{}
			}
			if terr != nil {
				// Not kept in the session: answered with the error
				// this once.
				items = append(items, fetchItem{key: k, err: terr})
				continue
			}
			sess.upsert(sessionPartition{key: k, fetchOffset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, currentLeaderEpoch: rp.CurrentLeaderEpoch,
				logStartOffset: rp.LogStartOffset, lastFetchedEpoch: lastFetchedEpoch(req.Version, rp.LastFetchedEpoch)})
		}
	}
	for _, ft := range req.ForgottenTopics {
		name, _ := h.fetchTopicName(useIDs, ft.Topic, ft.TopicID)
		for _, p := range ft.Partitions {
			k := sessionKey{topic: name, partition: p}
			if useIDs {
				k.id = ft.TopicID
			}
			sess.forget(k)
		}
	}
	for _, sp := range sess.parts {
		items = append(items, fetchItem{key: sp.key, sp: sp, part: replica.FetchPartition{
			TopicPartition:      replica.TopicPartition{Topic: sp.key.topic, Partition: sp.key.partition},
			FetchOffset:         sp.fetchOffset,
			MaxBytes:            sp.maxBytes,
			CurrentLeaderEpoch:  sp.currentLeaderEpoch,
			LastFetchedEpoch:    sp.lastFetchedEpoch,
			HasLastFetchedEpoch: sp.lastFetchedEpoch >= 0,
			LogStartOffset:      sp.logStartOffset,
		}})
	}
	sess.epoch++
	return items
}

// fetchItems returns the partitions of a sessionless fetch.
func (h *Handler) fetchItems(req *kmsg.FetchRequest) []fetchItem {
	useIDs := req.Version >= 13
	var items []fetchItem
	for _, rt := range req.Topics {
		name, terr := h.fetchTopicName(useIDs, rt.Topic, rt.TopicID)
		for _, rp := range rt.Partitions {
			k := sessionKey{id: rt.TopicID, topic: name, partition: rp.Partition}
			lfe := lastFetchedEpoch(req.Version, rp.LastFetchedEpoch)
			items = append(items, fetchItem{key: k, err: terr, part: replica.FetchPartition{
				TopicPartition:      replica.TopicPartition{Topic: name, Partition: rp.Partition},
				FetchOffset:         rp.FetchOffset,
				MaxBytes:            rp.PartitionMaxBytes,
				CurrentLeaderEpoch:  rp.CurrentLeaderEpoch,
				LastFetchedEpoch:    lfe,
				HasLastFetchedEpoch: lfe >= 0,
				LogStartOffset:      rp.LogStartOffset,
			}})
		}
	}
	return items
}

// lastFetchedEpoch is a partition's last_fetched_epoch (v12+), -1 when
// not given.
func lastFetchedEpoch(version int16, epoch int32) int32 {
	if version < 12 {
		return -1
	}
	return epoch
}

// fillFetchResponse adds the items' answers to resp (in an incremental
// session, only the partitions that changed) and returns the segment
// slices their record regions stand for.
func fillFetchResponse(resp *kmsg.FetchResponse, items []fetchItem, byItem []*replica.FetchResult, sess *fetchSession, incremental bool) []log.FileSlice {
	var slices []log.FileSlice
	var sent map[sessionKey]bool
	if sess != nil {
		sess.mu.Lock()
		defer sess.mu.Unlock()
		sent = make(map[sessionKey]bool)
	}
	var cur *kmsg.FetchResponseTopic
	for i, it := range items {
		sp, size := fetchPartitionResponse(it, byItem[i], &slices)
		if c := it.sp; c != nil {
			changed := size > 0 || sp.ErrorCode != 0 || sp.DivergingEpoch.EndOffset >= 0 || sp.PreferredReadReplica >= 0 ||
				c.hw != sp.HighWatermark || c.lso != sp.LastStableOffset || c.lstart != sp.LogStartOffset
			c.hw, c.lso, c.lstart = sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset
			if size > 0 {
				sent[c.key] = true
			}
			if incremental && !changed {
				continue
			}
		}
		if cur == nil || cur.Topic != it.key.topic || cur.TopicID != it.key.id {
			t := kmsg.NewFetchResponseTopic()
			t.Topic, t.TopicID = it.key.topic, it.key.id
			resp.Topics = append(resp.Topics, t)
			cur = &resp.Topics[len(resp.Topics)-1]
		}
		cur.Partitions = append(cur.Partitions, sp)
	}
	if sess != nil {
		sess.rotate(sent)
	}
	return slices
}

// fetchPartitionResponse is one partition's answer, r nil if it was not
// fetched (it.err says why); its records, if any, become a region marker
// and are added to slices.
func fetchPartitionResponse(it fetchItem, r *replica.FetchResult, slices *[]log.FileSlice) (kmsg.FetchResponseTopicPartition, int64) {
	sp := kmsg.NewFetchResponseTopicPartition()
	sp.Partition = it.key.partition
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
	sp.PreferredReadReplica = -1
	sp.RecordBatches = []byte{}
	if r == nil {
		sp.ErrorCode = ErrorCode(it.err)
		return sp, 0
	}
	sp.ErrorCode = ErrorCode(r.Err)
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
	if r.Err != nil {
		return sp, 0
	}
	if r.PreferredReadReplica >= 0 {
		sp.PreferredReadReplica = r.PreferredReadReplica
		return sp, 0
	}
	if r.DivergingEpoch.EndOffset >= 0 {
		sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = r.DivergingEpoch.Epoch, r.DivergingEpoch.EndOffset
		return sp, 0
	}
	if r.AbortedTransactions != nil {
		// read_committed: the list, empty or not; null otherwise, as
		// Kafka sends it.
		sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(r.AbortedTransactions))
		for j, at := range r.AbortedTransactions {
			a := &sp.AbortedTransactions[j]
			a.Default()
			a.ProducerID, a.FirstOffset = at.ProducerID, at.FirstOffset
		}
	}
	if r.Records.Size == 0 {
		return sp, 0
	}
	sp.RecordBatches = regionMarker(len(*slices))
	*slices = append(*slices, r.Records)
	return sp, r.Records.Size
}

// fetchTopicName resolves a fetch's topic: by ID from v13, else by name.
func (h *Handler) fetchTopicName(useIDs bool, name string, id [16]byte) (string, error) {
	if !useIDs {
		return name, nil
	}
	t, ok := h.image().TopicByID(id)
	if !ok {
		return "", kerr.UnknownTopicID
	}
	return t.Name, nil
}

// Zero-copy encoding. kmsg encodes the response with a 16-byte marker in
// place of each partition's records; encodeWithRegions then finds the
// markers in order (they sit among a few hundred bytes of headers), fixes
// each length prefix for the real size and records where the file bytes go.
// The marker's first 12 bytes are random per process, so they cannot be
// produced by a topic name (which is ASCII) and are vanishingly unlikely to
// occur in a header's integers.
var markerPrefix = func() [12]byte {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:], rand.Uint64()|0x8080808080808080)
	binary.BigEndian.PutUint32(b[8:], rand.Uint32()|0x80808080)
	return b
}()

const markerLen = 16

func regionMarker(i int) []byte {
	m := make([]byte, markerLen)
	copy(m, markerPrefix[:])
	binary.BigEndian.PutUint32(m[12:], uint32(i))
	return m
}

// encodeWithRegions encodes a response with file regions, with the
// request's throttle (rc.encode).
func (rc *RequestContext) encodeWithRegions(resp kmsg.Response, slices []log.FileSlice) *Response {
	return spliceRegions(rc.encode(resp), resp.IsFlexible(), slices)
}

// spliceRegions replaces the region markers of an encoded response by
// their file regions.
func spliceRegions(enc *Response, flexible bool, slices []log.FileSlice) *Response {
	if len(slices) == 0 {
		return enc
	}
	buf := enc.Buf
	out := make([]byte, 0, len(buf))
	regions := make([]FileRegion, 0, len(slices))
	cursor := 0
	var total int64
	for i, s := range slices {
		m := regionMarker(i)
		p := bytes.Index(buf[cursor:], m)
		if p < 0 {
			panic("kapi: fetch response marker not found")
		}
		p += cursor
		// Bytes in memory (read from remote storage) are a region of
		// their own, written from where they are. A slice with neither
		// (an FS without *os.File) is read into the response; if that
		// fails, the partition gets none.
		inline, inMemory := s.Bytes()
		size := s.Size
		if s.File == nil {
			if !inMemory {
				var err error
				if inline, err = s.ReadInto(nil); err != nil {
					inline = nil
				}
			}
			size = int64(len(inline))
		}
		if flexible {
			// compact bytes: uvarint(len+1); 17 fits in one byte.
			out = append(out, buf[cursor:p-1]...)
			out = binary.AppendUvarint(out, uint64(size)+1)
		} else {
			out = append(out, buf[cursor:p-4]...)
			out = binary.BigEndian.AppendUint32(out, uint32(size))
		}
		cursor = p + markerLen
		switch {
		case s.File != nil:
			regions = append(regions, FileRegion{At: len(out), File: s.File, Off: s.Pos, Len: s.Size})
		case inMemory && size > 0:
			regions = append(regions, FileRegion{At: len(out), Bytes: inline, Len: size})
		default:
			out = append(out, inline...)
			continue
		}
		total += size
	}
	out = append(out, buf[cursor:]...)
	binary.BigEndian.PutUint32(out, uint32(int64(len(out)-4)+total))
	return &Response{Buf: out, Regions: regions, Throttle: enc.Throttle}
}
