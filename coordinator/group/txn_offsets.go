package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// Transactional offset commits (KIP-98, KIP-447): TxnOffsetCommit writes
// the offsets as records of the producer's transaction in
// __consumer_offsets (runtime.WriteTransactional); they stay pending
// (offsets.go) until the transaction coordinator's marker, which
// WriteTxnMarkers hands to CompleteTransaction, commits or aborts them.

// TxnVerifier checks with the transaction coordinator that a producer's
// transaction includes a partition of __consumer_offsets before its
// offsets are written there (Kafka's KIP-890 part 1 verification, which
// the coordinator runtime starts through the partition writer); from
// TxnOffsetCommit v5 it asks the coordinator to add the partition instead
// (KIP-890 part 2, without AddOffsetsToTxn). version is the
// TxnOffsetCommit's, which also decides the errors older clients get.
// done is called once, possibly from another goroutine, with nil or the
// error to answer.
type TxnVerifier func(transactionalID string, producerID int64, producerEpoch int16, partition int32, version int16, done func(error))

// TxnOffsetCommit commits offsets as part of a producer's transaction
// (versions 0 to 6; v6 names topics by id). Topics and partitions that do
// not exist get UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for an id),
// as KafkaApis answers before asking the coordinator; every other error
// is answered on every partition (Kafka's
// TxnOffsetCommitRequest.getErrorResponse).
func (s *Service) TxnOffsetCommit(rc RequestContext, req *kmsg.TxnOffsetCommitRequest, done func(*kmsg.TxnOffsetCommitResponse)) {
	resp := &kmsg.TxnOffsetCommitResponse{Version: req.Version}
	pre := make([][]int16, len(req.Topics))
	names := make([]string, len(req.Topics))
	var valid []txnOffsetCommitTopic
	for i, t := range req.Topics {
		var vt txnOffsetCommitTopic
		vt, pre[i] = resolveCommitTopic(s.opts.Metadata, req.Version >= 6, t.TopicID, t.Topic, t.Partitions,
			func(p kmsg.TxnOffsetCommitRequestTopicPartition) int32 { return p.Partition })
		names[i] = vt.name
		if len(vt.partitions) > 0 {
			valid = append(valid, vt)
		}
	}
	finish := func(codes map[string]map[int32]int16, err error) {
		var errc int16
		if err != nil {
			code, _ := operationError(err)
			if code == kerr.CoordinatorLoadInProgress && req.Version < 2 {
				// Producers before 2.0 treat the loading error as
				// fatal (KAFKA-7296); KafkaApis answers them this.
				code = kerr.CoordinatorNotAvailable
			}
			errc = code.Code
		}
		for i, t := range req.Topics {
			rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
			for j, p := range t.Partitions {
				c := pre[i][j]
				if c == -1 {
					c = errc
					if err == nil {
						c = codes[names[i]][p.Partition]
					}
				}
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: c})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		done(resp)
	}
	switch {
	case req.Group == "":
		finish(nil, apierr.Errorf(kerr.InvalidGroupID, "The group id is empty."))
		return
	case len(valid) == 0:
		finish(nil, nil)
		return
	}
	partition := s.PartitionFor(req.Group)
	write := func() {
		runtime.WriteTransactional(s.rt, "txn-commit-offset", partition, req.ProducerID, req.ProducerEpoch,
			func(sh *Shard) (runtime.Result[map[string]map[int32]int16], error) {
				return sh.commitTransactionalOffset(rc, req, valid)
			}, finish)
	}
	if s.opts.VerifyTransaction == nil {
		write()
		return
	}
	s.opts.VerifyTransaction(req.TransactionalID, req.ProducerID, req.ProducerEpoch, partition, req.Version, func(err error) {
		if err != nil {
			finish(nil, err)
			return
		}
		write()
	})
}

type txnOffsetCommitTopic = commitTopic[kmsg.TxnOffsetCommitRequestTopicPartition]

// commitTransactionalOffset is OffsetMetadataManager.commitTransactionalOffset:
// validate the member and generation (or epoch), then one record per
// partition, written in the producer's transaction.
func (s *Shard) commitTransactionalOffset(rc RequestContext, req *kmsg.TxnOffsetCommitRequest, topics []txnOffsetCommitTopic) (runtime.Result[map[string]map[int32]int16], error) {
	var res runtime.Result[map[string]map[int32]int16]
	if err := s.validateTransactionalOffsetCommit(rc, req); err != nil {
		return res, err
	}
	now := s.now().UnixMilli()
	codes := map[string]map[int32]int16{}
	for _, t := range topics {
		pc := codes[t.name]
		if pc == nil {
			pc = map[int32]int16{}
			codes[t.name] = pc
		}
		for _, p := range t.partitions {
			if p.Metadata != nil && len(*p.Metadata) > s.cfg.OffsetMetadataMaxSize {
				pc[p.Partition] = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			pc[p.Partition] = 0
			o := OffsetAndMetadata{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: strOr(p.Metadata, ""), CommitTimestamp: now, ExpireTimestamp: -1}
			if req.Version < 2 {
				o.LeaderEpoch = -1
			}
			res.Records = append(res.Records, offsetCommitRecord(req.Group, t.name, p.Partition, o))
		}
	}
	s.metrics.offsetCommits(len(res.Records))
	res.Response = codes
	return res, nil
}

// validateTransactionalOffsetCommit is Kafka's: a group that does not exist
// is created as a "simple" group for a commit without a generation, and
// is ILLEGAL_GENERATION otherwise; a stale member epoch is
// ILLEGAL_GENERATION too.
func (s *Shard) validateTransactionalOffsetCommit(rc RequestContext, req *kmsg.TxnOffsetCommitRequest) error {
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			return apierr.Errorf(kerr.IllegalGeneration, "Group %s not found.", req.Group)
		}
		cg, _ := s.getOrMaybeCreateClassicGroup(req.Group, true)
		g = cg
	}
	err := g.validateOffsetCommit(req.MemberID, req.InstanceID, req.Generation, true, rc.APIVersion)
	if apierr.CodeOf(err) == kerr.StaleMemberEpoch {
		return apierr.Errorf(kerr.IllegalGeneration, "%v", err)
	}
	return err
}

// CompleteTransaction writes a producer's transaction marker to a
// partition of __consumer_offsets and applies it to the transaction's
// pending offsets (Kafka's GroupCoordinator.completeTransaction, which
// WriteTxnMarkers calls for this topic's partitions). done gets nil once
// the marker is committed.
func (s *Service) CompleteTransaction(partition int32, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, _ time.Duration, done func(error)) {
	runtime.CompleteTransaction(s.rt, partition, producerID, producerEpoch, coordinatorEpoch, commit, done)
}
