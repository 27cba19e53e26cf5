package group

import (
	"log/slog"
	"math"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/coordinator/runtime"
)

// TopicInfo is what the coordinator needs to know of a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Metadata is the coordinator's view of the cluster's topics (Kafka's
// MetadataImage.topics()). It must be safe for concurrent use.
type Metadata interface {
	TopicByName(name string) (TopicInfo, bool)
	TopicByID(id [16]byte) (TopicInfo, bool)
	// Topics returns every topic (for regular expression subscriptions).
	Topics() []TopicInfo
}

// Options wire a Service.
type Options struct {
	Config Config
	// Log appends to and reads __consumer_offsets (replica.Manager).
	Log      runtime.PartitionLog
	Metadata Metadata
	// NumPartitions is the number of partitions of __consumer_offsets:
	// the topic's if it exists, else offsets.topic.num.partitions.
	NumPartitions func() int32
	Now           func() time.Time
	Logger        *slog.Logger
	Registerer    prometheus.Registerer // nil: no metrics
	// LogEnd, if set, returns a partition's high watermark, for the
	// consumer lag gauge.
	LogEnd func(topic string, partition int32) (int64, bool)
	// VerifyTransaction, if set, checks (or, from TxnOffsetCommit v5,
	// makes) the group's partition part of the producer's transaction
	// before a TxnOffsetCommit writes there
	// (transaction.partition.verification.enable).
	VerifyTransaction TxnVerifier
	// ShareGroupsEnabled reports whether share groups are served (Kafka:
	// the share.version feature finalized at 1 or more); nil: never.
	ShareGroupsEnabled func() bool
	// ShareState is the share coordinator's persister, which initializes
	// and deletes share-group state; nil: none, share-partitions count as
	// initialized at once with start offset -1 and deleting a share group
	// deletes no state.
	ShareState ShareStateInitializer
}

// Service is Kafka's GroupCoordinatorService: it routes each group to the
// shard of its __consumer_offsets partition, runs the operation there and
// turns failures into the response's error codes. Safe for concurrent
// use.
type Service struct {
	cfg       Config
	opts      Options
	log       *slog.Logger
	rt        *runtime.Runtime[*Shard]
	metrics   *Metrics
	rtMetrics *runtimeMetrics
	versions  metadataVersions
	// groupConfigs are the group configs of the metadata
	// (UpdateGroupConfig), read by every shard.
	groupConfigs groupConfigs
	// routines run the persister's calls.
	routines routine.Group
}

// NewService starts the coordinator with no shards: OnElection loads them.
func NewService(opts Options) *Service {
	cfg := opts.Config
	cfg.withDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{cfg: cfg, opts: opts, log: opts.Logger.With("component", "group-coordinator")}
	s.metrics = NewMetrics(opts.Registerer)
	s.metrics.logEnd = opts.LogEnd
	sm := &shardMetrics{m: s.metrics}
	var rtm runtime.Metrics
	if s.rtMetrics = newRuntimeMetrics(opts.Registerer); s.rtMetrics != nil {
		rtm = s.rtMetrics
	}
	s.rt = runtime.New(runtime.Config[*Shard]{
		Topic: metadata.ConsumerOffsetsTopic,
		Log:   opts.Log,
		NewShard: func(ctx runtime.ShardContext) *Shard {
			sh := newShard(&s.cfg, ctx, opts.Metadata, &s.versions, sm)
			sh.groupConfigs = &s.groupConfigs
			return sh
		},
		CommitTimeout: cfg.OffsetCommitTimeout,
		Now:           opts.Now,
		Logger:        s.log,
		Metrics:       rtm,
	})
	s.metrics.collect = func() snapshot { return collectSnapshot(s.rt, 5*time.Second) }
	return s
}

// Close unloads every shard and stops the coordinator.
func (s *Service) Close() {
	s.routines.StopAndWait()
	s.rt.Close()
	s.metrics.unregister()
	if s.rtMetrics != nil && s.opts.Registerer != nil {
		for _, c := range s.rtMetrics.collectors() {
			s.opts.Registerer.Unregister(c)
		}
	}
}

// OnElection makes this broker the coordinator of a partition of
// __consumer_offsets (Kafka's onElection).
func (s *Service) OnElection(partition, epoch int32) { s.rt.OnElection(partition, epoch) }

// OnResignation unloads a partition (Kafka's onResignation).
func (s *Service) OnResignation(partition, epoch int32) { s.rt.OnResignation(partition, epoch) }

// PartitionFor is the partition of __consumer_offsets that holds a group:
// abs(javaHashCode(groupID)) % partitions, as Kafka computes it.
func (s *Service) PartitionFor(groupID string) int32 {
	return PartitionFor(groupID, s.opts.NumPartitions())
}

// PartitionFor is Kafka's Utils.abs(groupId.hashCode()) % partitions.
func PartitionFor(key string, partitions int32) int32 {
	h := javaStringHashCode(key)
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

// javaStringHashCode is java.lang.String.hashCode over the UTF-16 code
// units of s.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + int32(r1)
			h = 31*h + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// once wraps a response callback so that only the first call counts: a
// parked JoinGroup or SyncGroup may be answered by the operation's own
// failure and by the group.
type once[T any] struct {
	done atomic.Bool
	f    func(T)
}

func newOnce[T any](f func(T)) *once[T] { return &once[T]{f: f} }

func (o *once[T]) respond(v T) {
	if o.done.CompareAndSwap(false, true) {
		o.f(v)
	}
}

// JoinGroup handles a classic JoinGroup; done is called once, possibly
// after the rebalance.
func (s *Service) JoinGroup(rc RequestContext, req *kmsg.JoinGroupRequest, done func(*kmsg.JoinGroupResponse)) {
	switch {
	case req.Group == "":
		done(joinError(req.MemberID, kerr.InvalidGroupID.Code))
		return
	case req.SessionTimeoutMillis < int32(s.cfg.ClassicMinSessionTimeout.Milliseconds()) ||
		req.SessionTimeoutMillis > int32(s.cfg.ClassicMaxSessionTimeout.Milliseconds()):
		done(joinError(req.MemberID, kerr.InvalidSessionTimeout.Code))
		return
	}
	o := newOnce(done)
	runtime.Write(s.rt, "classic-group-join", s.PartitionFor(req.Group), func(sh *Shard) (voidResult, error) {
		return sh.classicGroupJoin(rc, req, o.respond)
	}, func(_ runtime.Void, err error) {
		if err != nil {
			code, _ := operationError(err)
			o.respond(joinError("", code.Code))
		}
	})
}

// SyncGroup handles a classic SyncGroup.
func (s *Service) SyncGroup(rc RequestContext, req *kmsg.SyncGroupRequest, done func(*kmsg.SyncGroupResponse)) {
	switch {
	case req.Group == "":
		done(syncError(kerr.InvalidGroupID.Code))
		return
	case req.Version >= 5 && (req.ProtocolType == nil || req.Protocol == nil):
		// From v5 both are mandatory (KafkaApis checks it).
		done(syncError(kerr.InconsistentGroupProtocol.Code))
		return
	}
	o := newOnce(done)
	runtime.Write(s.rt, "classic-group-sync", s.PartitionFor(req.Group), func(sh *Shard) (voidResult, error) {
		return sh.classicGroupSync(rc, req, o.respond)
	}, func(_ runtime.Void, err error) {
		if err != nil {
			code, _ := operationError(err)
			o.respond(syncError(code.Code))
		}
	})
}

// Heartbeat handles a classic Heartbeat.
func (s *Service) Heartbeat(rc RequestContext, req *kmsg.HeartbeatRequest, done func(*kmsg.HeartbeatResponse)) {
	if req.Group == "" {
		done(&kmsg.HeartbeatResponse{ErrorCode: kerr.InvalidGroupID.Code})
		return
	}
	runtime.Write(s.rt, "classic-group-heartbeat", s.PartitionFor(req.Group), func(sh *Shard) (runtime.Result[*kmsg.HeartbeatResponse], error) {
		return sh.classicGroupHeartbeat(req)
	}, func(resp *kmsg.HeartbeatResponse, err error) {
		if err != nil {
			code, _ := operationError(err)
			if code == kerr.CoordinatorLoadInProgress {
				// The group is still loading: answer blindly, as
				// Kafka does, rather than make the member rejoin.
				code = nil
			}
			resp = &kmsg.HeartbeatResponse{}
			if code != nil {
				resp.ErrorCode = code.Code
			}
		}
		done(resp)
	})
}

// LeaveGroup handles a LeaveGroup in the v3+ form (members listed).
func (s *Service) LeaveGroup(rc RequestContext, req *kmsg.LeaveGroupRequest, done func(*kmsg.LeaveGroupResponse)) {
	if req.Group == "" {
		done(&kmsg.LeaveGroupResponse{ErrorCode: kerr.InvalidGroupID.Code})
		return
	}
	runtime.Write(s.rt, "classic-group-leave", s.PartitionFor(req.Group), func(sh *Shard) (runtime.Result[*kmsg.LeaveGroupResponse], error) {
		return sh.classicGroupLeave(req)
	}, func(resp *kmsg.LeaveGroupResponse, err error) {
		if err != nil {
			code, _ := operationError(err)
			resp = &kmsg.LeaveGroupResponse{}
			if code == kerr.UnknownMemberID { // the group does not exist
				for _, m := range req.Members {
					resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ErrorCode: code.Code})
				}
			} else {
				resp.ErrorCode = code.Code
			}
		}
		done(resp)
	})
}

// OnTopicsDeleted writes tombstones for every offset committed on the
// deleted topics, on every shard (Kafka's onPartitionsDeleted, which its
// metadata publisher calls).
func (s *Service) OnTopicsDeleted(topics []string) {
	set := make(map[string]bool, len(topics))
	for _, t := range topics {
		set[t] = true
	}
	runtime.WriteAllWhenLoaded(s.rt, "on-partitions-deleted", func(sh *Shard) (runtime.Result[runtime.Void], error) {
		return runtime.Result[runtime.Void]{Records: sh.onTopicsDeleted(set)}, nil
	}, func(rs []runtime.PartitionResult[runtime.Void]) {
		for _, r := range rs {
			if r.Err != nil {
				s.log.Warn("deleting the offsets of deleted topics failed", "partition", r.Partition, "topics", topics, "err", r.Err)
			}
		}
	})
}
