package controller

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// Broker registration, heartbeats and fencing (Kafka's ClusterControlManager
// and BrokerHeartbeatManager), and producer-id blocks
// (ProducerIdControlManager).

// brokerSession is the controller's view of a broker's liveness. Sessions
// live only on the active controller and start afresh when it activates.
type brokerSession struct {
	lastContact time.Time
	fenced      bool
	// registeredAt is the offset of the broker's RegisterBrokerRecord:
	// it is caught up once its metadata offset reaches it.
	registeredAt int64
	shuttingDown bool
	// confirmed: this controller has heard from this incarnation. A
	// session a newly active controller assumes for every registered
	// broker keeps the broker from being fenced at once, but does not
	// keep a new incarnation from registering: after a failover (or a
	// restart of a single node, whose controller restarted with it) the
	// old incarnation may be long gone.
	confirmed bool
	// offlineDirs are the log dirs the broker last reported offline
	// (BrokerHeartbeat's OfflineLogDirs, KIP-858).
	offlineDirs [][16]byte
}

func (s *brokerSession) valid(now time.Time, timeout time.Duration) bool {
	return s != nil && s.confirmed && !s.fenced && now.Sub(s.lastContact) < timeout
}

// ProducerIDBlockSize is the number of producer ids in one block
// (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// RegisterBroker is BrokerRegistration (KIP-631): a broker announces its
// listeners, rack and supported features; a new incarnation gets a new
// broker epoch (the offset of its record) and starts fenced.
func (c *QuorumController) RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	type out struct{ epoch int64 }
	o, off, err := write(ctx, c, "registerBroker", func(im *metadata.Image) (writeResult[out], error) {
		if req.ClusterID != c.cfg.ClusterID {
			return writeResult[out]{}, apierr.Errorf(kerr.InconsistentClusterID, "Expected cluster ID %s, but got cluster ID %s", c.cfg.ClusterID, req.ClusterID)
		}
		existing := im.Brokers[req.BrokerID]
		now := c.now()
		if existing != nil && existing.IncarnationID != uuid.UUID(req.IncarnationID) &&
			c.sessions[req.BrokerID].valid(now, c.cfg.SessionTimeout) {
			return writeResult[out]{}, apierr.Errorf(kerr.DuplicateBrokerRegistration, "Another broker is registered with that broker id.")
		}
		rec := &metadata.RegisterBrokerRecord{
			BrokerID: req.BrokerID, IncarnationID: req.IncarnationID, Rack: req.Rack, Fenced: true,
		}
		if req.Version >= 2 && len(req.LogDirs) > 0 {
			for _, d := range req.LogDirs {
				rec.LogDirs = append(rec.LogDirs, uuid.UUID(d))
			}
		}
		for _, l := range req.Listeners {
			rec.EndPoints = append(rec.EndPoints, metadata.BrokerEndpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
		}
		for _, f := range req.Features {
			if lvl, ok := im.Features[f.Name]; ok && (lvl < f.MinSupportedVersion || lvl > f.MaxSupportedVersion) {
				return writeResult[out]{}, apierr.Errorf(kerr.UnsupportedVersion, "Unable to register because the broker does not support finalized version %d of %s. The broker wants a version between %d and %d, inclusive.", lvl, f.Name, f.MinSupportedVersion, f.MaxSupportedVersion)
			}
			rec.Features = append(rec.Features, metadata.BrokerFeature{Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
		}
		var recs []metadata.Record
		if existing != nil && existing.IncarnationID == uuid.UUID(req.IncarnationID) {
			// The same process again (a retried request): amend.
			rec.BrokerEpoch, rec.Fenced, rec.InControlledShutdown = existing.Epoch, existing.Fenced, existing.InControlledShutdown
		} else {
			// A new incarnation: whatever the old one led is led
			// no longer until this one has caught up (Kafka's
			// handleBrokerUncleanShutdown). Unless it names the
			// epoch of the one before as that of its clean shutdown
			// (KIP-966), it also leaves every ELR.
			if existing != nil {
				opts := keepSoleReplicas
				if req.PreviousBrokerEpoch < 0 || req.PreviousBrokerEpoch != existing.Epoch {
					opts |= uncleanShutdown
				}
				recs = append(recs, c.leadershipLossRecords(im, req.BrokerID, opts)...)
			}
			// The broker epoch is the offset the record will have,
			// as in Kafka: unique and growing.
			rec.BrokerEpoch = im.Offset + 1 + int64(len(recs))
		}
		recs = append(recs, rec)
		return writeResult[out]{records: recs, resp: out{rec.BrokerEpoch}}, nil
	})
	if err != nil {
		return nil, err
	}
	resp.BrokerEpoch = o.epoch
	c.queue.push(event{"registerSession", func() {
		b := c.latest.Brokers[req.BrokerID]
		if b == nil {
			return
		}
		c.sessions[req.BrokerID] = &brokerSession{lastContact: c.now(), fenced: b.Fenced, registeredAt: off, confirmed: true}
	}})
	c.log.Info("registered broker", "broker", req.BrokerID, "epoch", o.epoch, "rack", req.Rack)
	return resp, nil
}

// BrokerHeartbeat keeps a broker's session alive and moves it between
// fenced and unfenced: a fenced broker whose metadata has caught up with
// its registration is unfenced; one that asks to be fenced is fenced; one
// that asks to shut down gives up its leaderships first.
func (c *QuorumController) BrokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	type out struct{ caughtUp, fenced, shutdown bool }
	o, _, err := write(ctx, c, "brokerHeartbeat", func(im *metadata.Image) (writeResult[out], error) {
		b := im.Brokers[req.BrokerID]
		if b == nil {
			return writeResult[out]{}, apierr.Errorf(kerr.BrokerIDNotRegistered, "Broker %d is not registered.", req.BrokerID)
		}
		if b.Epoch != req.BrokerEpoch {
			return writeResult[out]{}, apierr.Errorf(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d", b.Epoch, req.BrokerEpoch)
		}
		s := c.sessions[req.BrokerID]
		if s == nil {
			s = &brokerSession{fenced: b.Fenced, registeredAt: b.Epoch}
			c.sessions[req.BrokerID] = s
		}
		s.lastContact, s.confirmed = c.now(), true
		c.noteOfflineDirs(b.ID, s, req.OfflineLogDirs)
		caughtUp := req.CurrentMetadataOffset >= s.registeredAt
		var recs []metadata.Record
		switch {
		case req.WantShutdown:
			// Controlled shutdown: move the broker's leaderships away
			// and fence it (Kafka's SHUTDOWN_NOW state): it may stop
			// once that is committed, and a restart registers anew.
			if !b.Fenced {
				s.shuttingDown = true
				recs = append(recs, c.leadershipLossRecords(im, b.ID, 0)...)
				recs = append(recs, &metadata.BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Fenced: 1, InControlledShutdown: 1})
			}
		case req.WantFence && !b.Fenced:
			recs = append(recs, c.fenceRecords(im, b)...)
		case !req.WantFence && b.Fenced && caughtUp:
			recs = append(recs, &metadata.BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Fenced: -1})
			recs = append(recs, c.electOnUnfence(im, b.ID)...)
		}
		if len(recs) == 0 && len(req.OfflineLogDirs) > 0 {
			// Alone in its batch, so that its changes are built on
			// the image they apply to; a heartbeat that fences or
			// unfences leaves them to the next one.
			recs = c.dirsOfflineRecords(im, b, req.OfflineLogDirs)
		}
		fenced := b.Fenced
		switch {
		case req.WantFence, req.WantShutdown:
			fenced = true
		case b.Fenced && caughtUp && !req.WantShutdown:
			fenced = false
		}
		s.fenced = fenced
		return writeResult[out]{records: recs, resp: out{caughtUp: caughtUp, fenced: fenced, shutdown: req.WantShutdown}}, nil
	})
	if err != nil {
		return nil, err
	}
	resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = o.caughtUp, o.fenced, o.shutdown
	return resp, nil
}

// noteOfflineDirs records the log dirs a broker reports offline (for
// OfflineLogDirs) and logs a change once; dirsOfflineRecords moves the
// leadership of the replicas in them (directories.go). On the loop.
func (c *QuorumController) noteOfflineDirs(broker int32, s *brokerSession, dirs [][16]byte) {
	if slices.Equal(s.offlineDirs, dirs) {
		return
	}
	names := make([]string, len(dirs))
	for i, d := range dirs {
		names[i] = uuid.UUID(d).String()
	}
	if len(dirs) > 0 {
		c.log.Warn("broker reports offline log dirs", "broker", broker, "offline_dirs", names)
	} else if len(s.offlineDirs) > 0 {
		c.log.Info("broker reports no offline log dir any more", "broker", broker)
	}
	s.offlineDirs = slices.Clone(dirs)
}

// OfflineLogDirs returns the log dirs each broker last reported offline in
// its heartbeat (directory ids), as the active controller knows them; nil
// if ctx ends first or the controller is closed.
func (c *QuorumController) OfflineLogDirs(ctx context.Context) map[int32][][16]byte {
	ch := make(chan map[int32][][16]byte, 1)
	if !c.queue.push(event{"offlineLogDirs", func() {
		out := map[int32][][16]byte{}
		for id, s := range c.sessions {
			if len(s.offlineDirs) > 0 {
				out[id] = slices.Clone(s.offlineDirs)
			}
		}
		ch <- out
	}}) {
		return nil
	}
	select {
	case out := <-ch:
		return out
	case <-ctx.Done():
		return nil
	}
}

// fenceStaleBrokers fences brokers whose session expired (Kafka's
// maybeFenceOneStaleBroker, all at once here). On the loop.
func (c *QuorumController) fenceStaleBrokers() {
	if !c.active {
		return
	}
	now := c.now()
	for _, b := range c.latest.SortedBrokers() {
		s := c.sessions[b.ID]
		if b.Fenced || s == nil || now.Sub(s.lastContact) < c.cfg.SessionTimeout {
			continue
		}
		c.log.Info("fencing broker: its session expired", "broker", b.ID, "last_heartbeat", s.lastContact.Format(time.RFC3339Nano))
		s.fenced = true
		recs := c.fenceRecords(c.latest, b)
		if _, err := c.appendRecords(recs, func(int64, error) {}); err != nil {
			c.log.Warn("fencing broker failed", "broker", b.ID, "err", err)
			return
		}
	}
}

// UnregisterBroker removes a retired broker's registration (KIP-631,
// Kafka's QuorumController.unregisterBroker and
// ReplicationControlManager.handleBrokerUnregistered): it leaves every ISR
// and ELR, what it led gets another leader, and an UnregisterBrokerRecord
// removes it from the cluster, so Metadata no longer lists it. A broker
// that is still running registers again at its next heartbeat, as in
// Kafka: retire it by stopping it first.
func (c *QuorumController) UnregisterBroker(ctx context.Context, req *kmsg.UnregisterBrokerRequest) (*kmsg.UnregisterBrokerResponse, error) {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	_, _, err := write(ctx, c, "unregisterBroker", func(im *metadata.Image) (writeResult[struct{}], error) {
		b := im.Brokers[req.BrokerID]
		if b == nil {
			return writeResult[struct{}]{}, apierr.Errorf(kerr.BrokerIDNotRegistered, "Broker ID %d is not currently registered", req.BrokerID)
		}
		recs := c.leadershipLossRecords(im, b.ID, uncleanShutdown)
		recs = append(recs, &metadata.UnregisterBrokerRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch})
		c.log.Info("unregistering broker", "broker", b.ID, "epoch", b.Epoch, "partition_changes", len(recs)-1)
		return writeResult[struct{}]{records: recs}, nil
	})
	if err != nil {
		return nil, err
	}
	c.queue.push(event{"forgetSession", func() { delete(c.sessions, req.BrokerID) }})
	return resp, nil
}

// fenceRecords fences a broker and moves its leaderships away.
func (c *QuorumController) fenceRecords(im *metadata.Image, b *metadata.Broker) []metadata.Record {
	recs := c.leadershipLossRecords(im, b.ID, 0)
	return append(recs, &metadata.BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Fenced: 1})
}

// AllocateProducerIDs hands a broker the next block of producer ids.
func (c *QuorumController) AllocateProducerIDs(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	first, _, err := write(ctx, c, "allocateProducerIds", func(im *metadata.Image) (writeResult[int64], error) {
		b := im.Brokers[req.BrokerID]
		if b == nil {
			return writeResult[int64]{}, apierr.Errorf(kerr.BrokerIDNotRegistered, "Broker %d is not registered.", req.BrokerID)
		}
		if b.Epoch != req.BrokerEpoch {
			return writeResult[int64]{}, apierr.Errorf(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d", b.Epoch, req.BrokerEpoch)
		}
		next := im.NextProducerID
		if next > 1<<63-1-ProducerIDBlockSize {
			return writeResult[int64]{}, apierr.Errorf(kerr.UnknownServerError, "Exhausted all producerIds.")
		}
		rec := &metadata.ProducerIdsRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, NextProducerID: next + ProducerIDBlockSize}
		return writeResult[int64]{records: []metadata.Record{rec}, resp: next}, nil
	})
	if err != nil {
		return nil, err
	}
	resp.ProducerIDStart, resp.ProducerIDLen = first, ProducerIDBlockSize
	return resp, nil
}
