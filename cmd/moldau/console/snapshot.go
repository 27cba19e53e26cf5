package console

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Snapshot is the state of a cluster as one poll saw it. It is immutable
// once published: the poller builds a new one every time.
//
// Offsets follow Kafka's names: the log start offset (ListOffsets
// earliest), the log end offset (ListOffsets latest, read_uncommitted: the
// end a consumer sees, which is the high watermark), and the last stable
// offset (ListOffsets latest, read_committed). A follower's own log end is
// not in the protocol, so every replica of a partition shows the same
// offsets; its size on disk (DescribeLogDirs) is its own. -1 is unknown.
type Snapshot struct {
	// Seq increases by one with every published change; Time is when the
	// poll that produced it finished (Unix ms).
	Seq  int64 `json:"seq"`
	Time int64 `json:"time"`

	ClusterID    string        `json:"cluster_id"`
	ControllerID int32         `json:"controller_id"`
	Quorum       *Quorum       `json:"quorum"` // nil: the cluster does not serve DescribeQuorum
	Brokers      []Broker      `json:"brokers"`
	Topics       []Topic       `json:"topics"`
	Groups       []Group       `json:"groups"`
	Transactions []Transaction `json:"transactions"`
	Metrics      []Metrics     `json:"metrics,omitempty"`
	// Internal is the newest records of __consumer_offsets and
	// __transaction_state, and of __cluster_metadata when MetadataLog,
	// decoded, oldest first.
	Internal []InternalEvent `json:"internal,omitempty"`
	// MetadataLog says the console follows the metadata log (it was
	// given controllers: --bootstrap-controller).
	MetadataLog bool `json:"metadata_log,omitempty"`
	// Producers and Wires are who talks to whom and how fast (flows.go).
	Producers []Producer `json:"producers,omitempty"`
	Wires     []Wire     `json:"wires,omitempty"`

	// Errors maps a part ("metadata", "cluster", "quorum", "log_dirs",
	// "offsets", "records", "groups", "transactions", "internal", "metadata_log", "metrics", "producers") to why its last poll
	// failed; the part then shows its previous value.
	Errors map[string]string `json:"errors,omitempty"`
	// Truncated counts what was left out to bound a tick's work
	// ("groups": 12 means twelve groups were listed but not described;
	// "records": N means a cluster of N partitions got no cells).
	Truncated map[string]int `json:"truncated,omitempty"`

	// data is the JSON encoding, made once when the snapshot is
	// published and sent to every client.
	data []byte
}

// Quorum is the KRaft metadata quorum (DescribeQuorum).
type Quorum struct {
	LeaderID      int32         `json:"leader_id"`
	LeaderEpoch   int32         `json:"leader_epoch"`
	HighWatermark int64         `json:"high_watermark"`
	Voters        []QuorumVoter `json:"voters"`
	Observers     []QuorumVoter `json:"observers"`
}

// QuorumVoter is one replica of the metadata log. Lag is the leader's log
// end offset minus this one's (-1 unknown).
type QuorumVoter struct {
	ID           int32 `json:"id"`
	LogEndOffset int64 `json:"log_end_offset"`
	Lag          int64 `json:"lag"`
}

// Broker is a broker known from Metadata or DescribeCluster, or one named
// in a partition's replicas but known to neither (Alive false: dead,
// absent or fenced).
type Broker struct {
	ID     int32  `json:"id"`
	Host   string `json:"host,omitempty"`
	Port   int32  `json:"port,omitempty"`
	Rack   string `json:"rack,omitempty"`
	Alive  bool   `json:"alive"`
	Fenced bool   `json:"fenced,omitempty"`
	// LogDirs and Size (the sum over them) from DescribeLogDirs; Size is
	// -1 when unknown.
	LogDirs []LogDir `json:"log_dirs,omitempty"`
	Size    int64    `json:"size"`
}

// LogDir is one of a broker's log.dirs.
type LogDir struct {
	Dir   string `json:"dir"`
	Size  int64  `json:"size"`
	Error string `json:"error,omitempty"`
}

// Topic is a topic and its partitions, sorted by partition.
type Topic struct {
	Name       string      `json:"name"`
	ID         string      `json:"id"`
	Internal   bool        `json:"internal,omitempty"`
	Partitions []Partition `json:"partitions"`
	Error      string      `json:"error,omitempty"`
}

// Partition is one partition with its replicas and offsets.
type Partition struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
	LogStartOffset  int64   `json:"log_start_offset"`
	LogEndOffset    int64   `json:"log_end_offset"`
	HighWatermark   int64   `json:"high_watermark"`
	LastStable      int64   `json:"last_stable_offset"`
	// ReplicaSizes is each replica's size in bytes by broker id, from
	// DescribeLogDirs.
	ReplicaSizes map[int32]int64 `json:"replica_sizes,omitempty"`
	// Records is the shape of the newest records, drawn as the lane's
	// cells; nil when not read (an empty partition, or a cluster too
	// large to read, see doc.go).
	Records *Records `json:"records,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Records is the shape of a partition's newest records, one character per
// offset from From: no payloads, only what the lane draws. Shape and Keys
// have the same length and end at most at the high watermark; offsets past
// their end up to the high watermark were not read.
//
// Shape: 'r' a record, 't' a tombstone (null value), 'a' an aborted
// record (of a transaction that aborted, from the fetch's
// aborted_transactions), 'C' and 'A' a commit and an abort marker
// (control records), '_' no record at this offset (compacted away), '?'
// not read. Keys: '0'-'7' the key's colour (a hash of the key, one of
// eight), '-' no key.
type Records struct {
	From  int64  `json:"from"`
	Shape string `json:"shape"`
	Keys  string `json:"keys"`
	// LogEnd is the leader's log end offset (OffsetForLeaderEpoch for its
	// current epoch), which may pass the high watermark while followers
	// catch up; -1 unknown.
	LogEnd int64 `json:"log_end"`
}

// Group is a consumer group: classic (DescribeGroups) or consumer
// (KIP-848, ConsumerGroupDescribe). Epoch is the generation of a classic
// group, the group epoch of a consumer group.
type Group struct {
	ID           string        `json:"id"`
	Protocol     string        `json:"protocol"` // "classic" or "consumer"
	ProtocolType string        `json:"protocol_type,omitempty"`
	Assignor     string        `json:"assignor,omitempty"`
	State        string        `json:"state"`
	Epoch        int32         `json:"epoch"`
	Coordinator  int32         `json:"coordinator"`
	Members      []Member      `json:"members"`
	Offsets      []GroupOffset `json:"offsets"`
	Lag          int64         `json:"lag"` // the sum of Offsets' lags
	Error        string        `json:"error,omitempty"`
}

// Member is one member of a group with what it is assigned.
type Member struct {
	ID         string            `json:"id"`
	InstanceID string            `json:"instance_id,omitempty"`
	ClientID   string            `json:"client_id"`
	Host       string            `json:"host"`
	Assigned   []TopicPartitions `json:"assigned"`
}

// TopicPartitions is a topic and some of its partitions.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// GroupOffset is a group's committed offset on one partition and its lag
// behind the partition's log end offset (-1 unknown).
type GroupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	LogEnd    int64  `json:"log_end_offset"`
	Lag       int64  `json:"lag"`
}

// Transaction is one transactional id (ListTransactions,
// DescribeTransactions). StartTime is Unix ms (-1: none running); the page
// computes the age.
type Transaction struct {
	ID            string            `json:"id"`
	State         string            `json:"state"`
	ProducerID    int64             `json:"producer_id"`
	ProducerEpoch int16             `json:"producer_epoch"`
	Coordinator   int32             `json:"coordinator"`
	TimeoutMs     int32             `json:"timeout_ms"`
	StartTime     int64             `json:"start_time"`
	Partitions    []TopicPartitions `json:"partitions"`
	Error         string            `json:"error,omitempty"`
}

// Metrics is what one --metrics-url said: a few broker totals and their
// rates per second since the previous scrape (-1 unknown).
type Metrics struct {
	URL string `json:"url"`
	// Broker is the broker the URL was given for (--metrics-url ID=URL),
	// -1 none.
	Broker         int32   `json:"broker"`
	BytesIn        float64 `json:"bytes_in_total"`
	BytesOut       float64 `json:"bytes_out_total"`
	MessagesIn     float64 `json:"messages_in_total"`
	BytesInRate    float64 `json:"bytes_in_per_sec"`
	BytesOutRate   float64 `json:"bytes_out_per_sec"`
	MessagesInRate float64 `json:"messages_in_per_sec"`
	// Replication bytes sent by the broker's leaders to followers.
	ReplicationBytesOut     float64 `json:"replication_bytes_out_total"`
	ReplicationBytesOutRate float64 `json:"replication_bytes_out_per_sec"`
	Error                   string  `json:"error,omitempty"`
}

// Changes is what differs between two snapshots: the parts, and the names
// of the topics and groups that changed (added, removed or different).
type Changes struct {
	Cluster      bool     `json:"cluster,omitempty"` // cluster id, controller, errors, truncation
	Quorum       bool     `json:"quorum,omitempty"`
	Brokers      bool     `json:"brokers,omitempty"`
	Topics       []string `json:"topics,omitempty"`
	Groups       []string `json:"groups,omitempty"`
	Transactions bool     `json:"transactions,omitempty"`
	Metrics      bool     `json:"metrics,omitempty"`
	Internal     bool     `json:"internal,omitempty"`
	Flows        bool     `json:"flows,omitempty"` // producers and wires
}

// Any reports whether anything changed.
func (c Changes) Any() bool {
	return c.Cluster || c.Quorum || c.Brokers || len(c.Topics) > 0 || len(c.Groups) > 0 || c.Transactions || c.Metrics || c.Internal || c.Flows
}

// Diff compares two snapshots, ignoring Seq and Time. A nil a is the
// empty cluster: everything in b is new.
func Diff(a, b *Snapshot) Changes {
	if a == nil {
		a = &Snapshot{}
	}
	var c Changes
	c.Cluster = a.ClusterID != b.ClusterID || a.ControllerID != b.ControllerID ||
		!sameJSON(a.Errors, b.Errors) || !sameJSON(a.Truncated, b.Truncated)
	c.Quorum = !sameJSON(a.Quorum, b.Quorum)
	c.Brokers = !sameJSON(a.Brokers, b.Brokers)
	c.Topics = diffByName(a.Topics, b.Topics, func(t Topic) string { return t.Name })
	c.Groups = diffByName(a.Groups, b.Groups, func(g Group) string { return g.ID })
	c.Transactions = !sameJSON(a.Transactions, b.Transactions)
	c.Metrics = !sameJSON(a.Metrics, b.Metrics)
	c.Internal = !sameJSON(a.Internal, b.Internal) || a.MetadataLog != b.MetadataLog
	c.Flows = !sameJSON(a.Producers, b.Producers) || !sameJSON(a.Wires, b.Wires)
	return c
}

// diffByName returns the sorted names of the elements added, removed or
// changed between a and b.
func diffByName[T any](a, b []T, name func(T) string) []string {
	old := make(map[string]T, len(a))
	for _, v := range a {
		old[name(v)] = v
	}
	var out []string
	for _, v := range b {
		n := name(v)
		if o, ok := old[n]; !ok || !sameJSON(o, v) {
			out = append(out, n)
		}
		delete(old, n)
	}
	for n := range old {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// sameJSON compares two values by their JSON encoding: what the page
// sees is what counts, and nil and empty maps and slices are told apart
// only where the encoding tells them apart.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
