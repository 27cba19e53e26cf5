package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/kapi"
)

// lifecycleManager is the broker's side of KIP-631 (Kafka's
// BrokerLifecycleManager): it registers this broker with the active
// controller under a new incarnation id, then heartbeats every
// broker.heartbeat.interval.ms with the offset of the metadata it has
// applied. The controller unfences it once that offset has reached its
// registration; at shutdown it asks to shut down, so that the controller
// moves its leaderships away first (controlled shutdown). Each heartbeat
// names the log dirs that are offline (OfflineLogDirs, KIP-858) by the
// directory.id of their meta.properties.
type lifecycleManager struct {
	nodeID    int32
	clusterID string
	log       *slog.Logger
	channel   kapi.ControllerChannel
	offset    func() int64 // the metadata offset this broker has applied
	interval  time.Duration

	incarnation uuid.UUID
	listeners   []kmsg.BrokerRegistrationRequestListener
	rack        *string
	// offlineDirs returns the directory ids of the log dirs that are
	// offline; nil: none. onlineDirs those that are online, registered
	// as the broker's LogDirs (KIP-858).
	offlineDirs, onlineDirs func() [][16]byte
	// previousEpoch is the broker epoch of the last clean shutdown, -1
	// after an unclean one (KIP-966: the controller keeps a cleanly
	// restarted broker among its partitions' eligible leader replicas).
	previousEpoch int64

	// dirFailed wakes the heartbeat loop at once when a log dir fails
	// (Kafka's propagateDirectoryFailure).
	dirFailed chan struct{}

	epoch    atomic.Int64 // -1 until registered
	fenced   atomic.Bool
	unfenced chan struct{} // closed on the first unfencing
	once     sync.Once
	g        routine.Group
}

func newLifecycleManager(nodeID int32, clusterID string, logger *slog.Logger, channel kapi.ControllerChannel,
	offset func() int64, interval time.Duration, endpoints []metadata.BrokerEndpoint, rack *string) *lifecycleManager {
	m := &lifecycleManager{
		nodeID: nodeID, clusterID: clusterID, log: logger.With("component", "broker-lifecycle"),
		channel: channel, offset: offset, interval: interval, incarnation: uuid.Random(), rack: rack,
		unfenced: make(chan struct{}), previousEpoch: -1, dirFailed: make(chan struct{}, 1),
	}
	for _, e := range endpoints {
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = e.Name, e.Host, e.Port, e.SecurityProtocol
		m.listeners = append(m.listeners, l)
	}
	m.epoch.Store(-1)
	m.fenced.Store(true)
	return m
}

// Epoch is the broker epoch the controller gave this incarnation, -1
// before registration.
func (m *lifecycleManager) Epoch() int64 { return m.epoch.Load() }

// Start registers and heartbeats in the background.
func (m *lifecycleManager) Start() {
	m.g.Go(m.run)
}

// WaitUnfenced waits until the controller has unfenced this broker: its
// metadata has caught up, and the partitions it leads are its.
func (m *lifecycleManager) WaitUnfenced(ctx context.Context) error {
	select {
	case <-m.unfenced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *lifecycleManager) run(done <-chan struct{}) {
	ctx, cancel := routine.Context(done)
	defer cancel()
	for ctx.Err() == nil {
		if m.Epoch() < 0 {
			if err := m.register(ctx); err != nil {
				if ctx.Err() == nil {
					m.log.Warn("broker registration failed; retrying", "err", err)
					sleepCtx(ctx, m.interval/4)
				}
				continue
			}
		}
		if err := m.heartbeat(ctx, false); err != nil && ctx.Err() == nil {
			m.log.Warn("heartbeat failed", "err", err)
		}
		wait := m.interval
		if m.fenced.Load() {
			wait = min(wait, 50*time.Millisecond) // catch up and unfence fast at start
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-m.dirFailed:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// propagateDirectoryFailure heartbeats now, so that the controller hears
// of a failed log dir (OfflineLogDirs) without waiting for the next beat.
func (m *lifecycleManager) propagateDirectoryFailure() {
	select {
	case m.dirFailed <- struct{}{}:
	default:
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (m *lifecycleManager) register(ctx context.Context) error {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = m.nodeID, m.clusterID, m.incarnation
	req.Listeners, req.Rack = m.listeners, m.rack
	req.PreviousBrokerEpoch = m.previousEpoch
	req.Version = 4 // LogDirs (v2+) and PreviousBrokerEpoch (v3+) reach a remote controller
	if m.onlineDirs != nil {
		req.LogDirs = m.onlineDirs()
	}
	for _, f := range metadata.SupportedFeatures {
		rf := kmsg.NewBrokerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		req.Features = append(req.Features, rf)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := m.channel.Send(cctx, req)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.BrokerRegistrationResponse)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	m.epoch.Store(resp.BrokerEpoch)
	m.log.Info("registered with the controller", "broker_epoch", resp.BrokerEpoch, "incarnation", m.incarnation.String())
	return nil
}

func (m *lifecycleManager) heartbeat(ctx context.Context, shutdown bool) error {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1 // OfflineLogDirs
	req.BrokerID, req.BrokerEpoch = m.nodeID, m.Epoch()
	req.CurrentMetadataOffset = m.offset()
	req.WantShutdown = shutdown
	if m.offlineDirs != nil {
		req.OfflineLogDirs = m.offlineDirs()
	}
	cctx, cancel := context.WithTimeout(ctx, max(m.interval, 2*time.Second))
	defer cancel()
	r, err := m.channel.Send(cctx, req)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.BrokerHeartbeatResponse)
	switch err := kerr.ErrorForCode(resp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
		// The controller forgot this incarnation (a new cluster, a
		// fenced and unregistered broker): register again.
		m.log.Warn("the controller does not know this broker's epoch; registering again", "err", err)
		m.epoch.Store(-1)
		return nil
	default:
		return err
	}
	m.fenced.Store(resp.IsFenced)
	if !resp.IsFenced {
		m.once.Do(func() {
			m.log.Info("unfenced by the controller: serving", "metadata_offset", req.CurrentMetadataOffset)
			close(m.unfenced)
		})
	}
	if shutdown && !resp.ShouldShutdown {
		return fmt.Errorf("controller has not allowed the shutdown yet")
	}
	return nil
}

// ControlledShutdown asks the controller to move this broker's leaderships
// away before it stops (bounded by ctx), then stops heartbeating.
func (m *lifecycleManager) ControlledShutdown(ctx context.Context) {
	m.g.StopAndWait()
	if m.Epoch() < 0 {
		return
	}
	for ctx.Err() == nil {
		err := m.heartbeat(ctx, true)
		if err == nil {
			m.log.Info("controlled shutdown done: the controller moved this broker's leaderships")
			return
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	m.log.Warn("controlled shutdown did not complete in time; stopping anyway")
}

// Close stops heartbeating. Idempotent.
func (m *lifecycleManager) Close() { m.g.StopAndWait() }

// logDirIDs maps each log dir (filepath.Clean'd) to the directory.id of
// its meta.properties, read at start-up (a failed disk may not be readable
// later). A dir without one (meta.properties of an older version) is left
// out, and cannot be named to the controller.
func logDirIDs(dirs []string, logger *slog.Logger) map[string]uuid.UUID {
	ids := make(map[string]uuid.UUID, len(dirs))
	for _, d := range dirs {
		props, err := readProperties(filepath.Join(d, metaPropertiesFile))
		if err != nil {
			continue
		}
		id, err := uuid.Parse(props["directory.id"])
		if err != nil {
			logger.Warn("log dir has no valid directory.id in meta.properties: its failure cannot be reported to the controller", "dir", d)
			continue
		}
		ids[filepath.Clean(d)] = id
	}
	return ids
}

// dirIDsOf returns a function that maps log dirs (as the log Manager's
// OnlineDirs or OfflineDirs name them) to their directory ids.
func dirIDsOf(ids map[string]uuid.UUID, dirs func() []string) func() [][16]byte {
	return func() [][16]byte {
		var out [][16]byte
		for _, d := range dirs() {
			if id, ok := ids[filepath.Clean(d)]; ok {
				out = append(out, id)
			}
		}
		return out
	}
}
