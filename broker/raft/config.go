package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/log"
)

// MetadataTopicPartition is the metadata log's partition, as KRaft names
// it; its dir is Config.Dir/__cluster_metadata-0.
var MetadataTopicPartition = log.TopicPartition{Topic: "__cluster_metadata", Partition: 0}

// Config configures a Node. Zero values take the defaults noted, which are
// Kafka's where Kafka has the setting.
type Config struct {
	// NodeID is this node's node.id. Open starts it as a voter if it is
	// one of the newest voter set (the log's, else Voters), else as an
	// observer that becomes a voter once a committed VotersRecord names
	// it (KIP-853).
	NodeID int32
	// Voters maps each voter's node id to its controller listener
	// address (controller.quorum.voters, see ParseVoters): the voter set
	// of a quorum whose log has no VotersRecord yet (kraft.version 0).
	// Once AddVoter or RemoveVoter changed the set, the log's newest
	// VotersRecord is the set, whatever Voters says.
	Voters map[int32]string
	// ListenerName is the controller listener's name
	// (controller.listener.names' first; default CONTROLLER): the
	// endpoint of a voter that peers dial.
	ListenerName string
	// Dir is metadata.log.dir; the log and snapshots live in
	// Dir/__cluster_metadata-0.
	Dir        string
	Logger     *slog.Logger          // nil: slog.Default()
	Registerer prometheus.Registerer // nil: no metrics
	FS         log.FS                // nil: the OS
	Now        func() time.Time      // nil: time.Now

	// TickInterval is the raft tick, and the leader's heartbeat interval.
	// Default 100ms.
	TickInterval time.Duration
	// ElectionTimeout is controller.quorum.election.timeout.ms (default
	// 1s): a follower that hears nothing from a leader for a random time
	// between it and twice it starts an election, and a leader that does
	// not hear from a majority for it steps down (CheckQuorum).
	ElectionTimeout time.Duration
	// RequestTimeout is controller.quorum.request.timeout.ms (default 2s):
	// how long a peer has to acknowledge a batch of messages.
	RequestTimeout time.Duration
	// RetryBackoff is controller.quorum.retry.backoff.ms (default 20ms),
	// the first wait before redialling a peer; it doubles up to 1s.
	RetryBackoff time.Duration
	// Dial dials a peer (nil: a net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// PeerQueueSize bounds the messages waiting for one peer (default
	// 1024); when full, messages are dropped and raft told the peer is
	// unreachable.
	PeerQueueSize int

	// MaxBytesBetweenSnapshots is
	// metadata.log.max.record.bytes.between.snapshots (default 20 MiB):
	// a snapshot is taken once this many bytes of batches were committed
	// since the last one.
	MaxBytesBetweenSnapshots int64
	// MaxIntervalBetweenSnapshots is metadata.log.max.snapshot.interval.ms
	// (Kafka's default one hour; 0: by size only): a snapshot is also
	// taken once this long has passed since the last one (or since the
	// node opened) and anything was committed since, so that a node
	// restarted often does not replay every earlier start.
	MaxIntervalBetweenSnapshots time.Duration
	// MaxRetentionBytes is metadata.max.retention.bytes (default 100 MiB):
	// once the log is larger, its segments wholly before the newest
	// snapshot are deleted. Negative: never.
	MaxRetentionBytes int64
	// SegmentBytes is metadata.log.segment.bytes (default 1 GiB).
	SegmentBytes int32
	// MaxBatchSizeBytes bounds one appended batch (Kafka's
	// KafkaRaftClient.MAX_BATCH_SIZE_BYTES, 8 MiB; at most SegmentBytes).
	MaxBatchSizeBytes int
	// Bootstrap are controller listener addresses an observer
	// (OpenObserver) asks for the leader when Voters is empty
	// (controller.quorum.bootstrap.servers).
	Bootstrap []string

	// ClusterID is the cluster.id the voter puts in the UpdateRaftVoter
	// requests it sends (KIP-853).
	ClusterID string
	// DirectoryID is the directory.id of metadata.log.dir's
	// meta.properties: with the node id, the voter's key in the voter
	// set. Zero: unknown; the voter then never sends UpdateRaftVoter.
	DirectoryID [16]byte
	// LocalEndpoints returns this node's controller listeners as peers
	// should reach them (advertised, with bound ports), asked whenever a
	// voter compares them with its entry in the voter set; nil: none.
	LocalEndpoints func() []Endpoint
	// UpdateVoterPeriod is how long a voter waits between two checks
	// that the voter set holds its current endpoints, the first one
	// after it starts (Kafka's follower: three times
	// controller.quorum.fetch.timeout.ms, 2 s, so 6 s).
	UpdateVoterPeriod time.Duration

	observer bool // set by OpenObserver
}

// Defaults.
const (
	DefaultTickInterval             = 100 * time.Millisecond
	DefaultElectionTimeout          = time.Second
	DefaultRequestTimeout           = 2 * time.Second
	DefaultRetryBackoff             = 20 * time.Millisecond
	DefaultPeerQueueSize            = 1024
	DefaultMaxBytesBetweenSnapshots = 20 << 20
	DefaultMaxRetentionBytes        = 100 << 20
	DefaultSegmentBytes             = 1 << 30
	DefaultMaxBatchSizeBytes        = 8 << 20
	DefaultUpdateVoterPeriod        = 6 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ListenerName == "" {
		c.ListenerName = "CONTROLLER"
	}
	if c.FS == nil {
		c.FS = log.OSFS{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.TickInterval <= 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTimeout <= 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.Dial == nil {
		var d net.Dialer
		c.Dial = d.DialContext
	}
	if c.PeerQueueSize <= 0 {
		c.PeerQueueSize = DefaultPeerQueueSize
	}
	if c.MaxBytesBetweenSnapshots <= 0 {
		c.MaxBytesBetweenSnapshots = DefaultMaxBytesBetweenSnapshots
	}
	if c.MaxRetentionBytes == 0 {
		c.MaxRetentionBytes = DefaultMaxRetentionBytes
	}
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.MaxBatchSizeBytes <= 0 {
		c.MaxBatchSizeBytes = DefaultMaxBatchSizeBytes
	}
	// A batch must fit in one segment: with segments smaller than 8 MiB
	// (Kafka refuses them, metadata.log.segment.min.bytes; Moldau allows
	// them, for tests) a larger proposal is refused with
	// RECORD_LIST_TOO_LARGE rather than failing the log's append.
	c.MaxBatchSizeBytes = min(c.MaxBatchSizeBytes, int(c.SegmentBytes))
	if c.UpdateVoterPeriod <= 0 {
		c.UpdateVoterPeriod = DefaultUpdateVoterPeriod
	}
	switch {
	case c.Dir == "":
		return c, errors.New("raft: no metadata.log.dir")
	case c.observer:
		if len(c.Voters) == 0 && len(c.Bootstrap) == 0 {
			return c, errors.New("raft: an observer needs the voters or bootstrap servers")
		}
		if _, ok := c.Voters[c.NodeID]; ok {
			return c, fmt.Errorf("raft: node.id %d is a voter, not an observer", c.NodeID)
		}
		return c, nil
	case len(c.Voters) == 0 && len(c.Bootstrap) == 0:
		return c, errors.New("raft: no voters (controller.quorum.voters) and no bootstrap servers")
	case c.NodeID < 0:
		return c, fmt.Errorf("raft: node.id %d is negative", c.NodeID)
	}
	if c.ElectionTimeout < 2*c.TickInterval {
		return c, fmt.Errorf("raft: election timeout %v is under two ticks of %v", c.ElectionTimeout, c.TickInterval)
	}
	return c, nil
}

// voterIDs returns the voters' ids, sorted.
func (c Config) voterIDs() []int32 {
	ids := make([]int32, 0, len(c.Voters))
	for id := range c.Voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ParseVoters parses controller.quorum.voters: "id@host:port,...", each id
// a non-negative node id used once.
func ParseVoters(s string) (map[int32]string, error) {
	out := map[int32]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		idStr, addr, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("controller.quorum.voters: %q is not id@host:port", part)
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("controller.quorum.voters: %q has no valid node id", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("controller.quorum.voters: %q: %v", part, err)
		}
		if _, dup := out[int32(id)]; dup {
			return nil, fmt.Errorf("controller.quorum.voters: node id %d appears twice", id)
		}
		out[int32(id)] = addr
	}
	if len(out) == 0 {
		return nil, errors.New("controller.quorum.voters is empty")
	}
	return out, nil
}

// raftID is the etcd raft id of a Kafka node id: etcd reserves 0 (None),
// Kafka allows node.id 0, so raft id = node id + 1.
func raftID(nodeID int32) uint64 { return uint64(nodeID) + 1 }

// nodeID is the Kafka node id of an etcd raft id; None (0) is -1.
func nodeID(id uint64) int32 { return int32(id) - 1 }
