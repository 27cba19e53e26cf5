package broker

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/kapi"
	"github.com/moldau/moldau/log"
)

// assignmentsManager tells the controller which log dir holds each of this
// broker's replicas (KIP-858, Kafka's AssignmentsManager): the controller
// needs that to move the leadership of the replicas in a dir that fails.
//
// Rather than queueing events as Kafka does, it reconciles: after every
// metadata update (a replica created or moved) it compares each local
// log's dir with the partition's Directories in the current image, and
// sends the differences in one AssignReplicasToDirs (at most
// maxAssignmentsPerRequest partitions, as Kafka's batches). What the
// controller has not recorded yet is still different in the next image,
// so a failed or partial request is retried every retryInterval until the
// image agrees; nothing is lost to a controller failover.
type assignmentsManager struct {
	nodeID  int32
	log     *slog.Logger
	channel kapi.ControllerChannel
	image   func() *metadata.Image
	logs    func() []*log.Log
	// offline are the logs in offline dirs, with their dir.
	offline func() map[log.TopicPartition]string
	// dirIDs maps each log dir to its directory.id; epoch is the broker
	// epoch, -1 before registration. Set with channel before Start.
	dirIDs map[string]uuid.UUID
	epoch  func() int64

	retryInterval time.Duration
	wake          chan struct{}
	g             routine.Group
}

// maxAssignmentsPerRequest is Kafka's AssignmentsManager.MAX_ASSIGNMENTS_PER_REQUEST.
const maxAssignmentsPerRequest = 2250

func newAssignmentsManager(nodeID int32, logger *slog.Logger, image func() *metadata.Image, logs *log.Manager) *assignmentsManager {
	return &assignmentsManager{
		nodeID: nodeID, log: logger.With("component", "assignments-manager"),
		image: image, logs: logs.Logs, offline: logs.OfflineLogs, retryInterval: 500 * time.Millisecond, wake: make(chan struct{}, 1),
	}
}

func (m *assignmentsManager) Name() string { return "AssignmentsManager" }

// OnMetadataUpdate wakes the reconciliation: replicas may have been
// created, or the controller may have recorded an assignment.
func (m *assignmentsManager) OnMetadataUpdate(*metadata.Delta, *metadata.Image) { m.poke() }

func (m *assignmentsManager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Start reconciles in the background until Close.
func (m *assignmentsManager) Start() { m.g.Go(m.run) }

// Close stops it. Idempotent.
func (m *assignmentsManager) Close() { m.g.StopAndWait() }

func (m *assignmentsManager) run(done <-chan struct{}) {
	ctx, cancel := routine.Context(done)
	defer cancel()
	t := time.NewTicker(m.retryInterval)
	defer t.Stop()
	retry := true
	for {
		select {
		case <-done:
			return
		case <-m.wake:
		case <-t.C:
			if !retry {
				continue
			}
		}
		retry = m.reconcile(ctx)
		// At most one scan of the logs per minScanInterval, however
		// fast the metadata changes.
		gap := time.NewTimer(minScanInterval)
		select {
		case <-done:
			gap.Stop()
			return
		case <-gap.C:
		}
	}
}

// minScanInterval spaces the scans of every log (Kafka's AssignmentsManager
// batches for its dispatch interval too).
const minScanInterval = 100 * time.Millisecond

// reconcile sends one batch of the differences; it reports whether it
// should run again without a metadata update (something was sent, failed
// or is waiting for registration).
func (m *assignmentsManager) reconcile(ctx context.Context) bool {
	epoch := m.epoch()
	if epoch < 0 {
		return true
	}
	pending := m.pending(m.image())
	if len(pending) == 0 {
		return false
	}
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = m.nodeID, epoch
	n := 0
	for _, dir := range slices.SortedFunc(maps.Keys(pending), func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }) {
		rd := kmsg.NewAssignReplicasToDirsRequestDirectory()
		rd.ID = dir
		for topicID, parts := range pending[dir] {
			rt := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
			rt.TopicID = topicID
			for _, p := range parts {
				if n == maxAssignmentsPerRequest {
					break
				}
				rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
				n++
			}
			if len(rt.Partitions) > 0 {
				rd.Topics = append(rd.Topics, rt)
			}
		}
		if len(rd.Topics) > 0 {
			req.Directories = append(req.Directories, rd)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := m.channel.Send(cctx, req)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("AssignReplicasToDirs failed; retrying", "partitions", n, "err", err)
		}
		return true
	}
	resp := r.(*kmsg.AssignReplicasToDirsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		m.log.Warn("AssignReplicasToDirs refused; retrying", "partitions", n, "err", err)
		return true
	}
	for _, d := range resp.Directories {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					m.log.Debug("assignment refused", "dir", uuid.UUID(d.ID).String(), "topic_id", uuid.UUID(t.TopicID).String(),
						"partition", p.Partition, "err", kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
	}
	m.log.Debug("assigned replicas to log dirs", "partitions", n)
	return true
}

// pending returns, by dir and topic id, the partitions hosted here whose
// directory in im is not the dir their log is in. A log in a dir that
// failed counts too: if the dir failed before its assignment reached the
// controller, the assignment tells the controller the replica is offline.
func (m *assignmentsManager) pending(im *metadata.Image) map[uuid.UUID]map[[16]byte][]int32 {
	out := map[uuid.UUID]map[[16]byte][]int32{}
	add := func(tp log.TopicPartition, topicID [16]byte, logDir string) {
		t, ok := im.Topic(tp.Topic)
		if !ok || int(tp.Partition) >= len(t.Partitions) || tp.Partition < 0 || topicID != [16]byte(t.ID) {
			return
		}
		p := t.Partitions[tp.Partition]
		if !slices.Contains(p.Replicas, m.nodeID) {
			return
		}
		dir, ok := m.dirIDs[filepath.Clean(logDir)]
		if !ok || p.Directory(m.nodeID) == dir {
			return
		}
		if out[dir] == nil {
			out[dir] = map[[16]byte][]int32{}
		}
		out[dir][t.ID] = append(out[dir][t.ID], tp.Partition)
	}
	for _, l := range m.logs() {
		add(l.TopicPartition(), l.TopicID(), filepath.Dir(l.Dir()))
	}
	for tp, dir := range m.offline() {
		// A closed log's topic id is not at hand: the image's. A log
		// of an older topic of the same name blocks the creation of
		// the new one's here all the same (it may be in that dir).
		if t, ok := im.Topic(tp.Topic); ok {
			add(tp, t.ID, dir)
		}
	}
	return out
}
