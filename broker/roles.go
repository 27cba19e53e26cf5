package broker

// Roles (process.roles): a combined node (broker,controller) is a voter of
// the metadata quorum that also serves clients; a broker-only node follows
// the metadata log as an observer (broker/raft) and reaches the active
// controller over the network; a controller-only node is a voter and the
// controller, serving the controller listener only. See doc.go.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/broker/uuid"
)

// hasMetaProperties reports whether any of dirs has a meta.properties.
func hasMetaProperties(dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, metaPropertiesFile)); err == nil {
			return true
		}
	}
	return false
}

// clusterIDDiscoveryTimeout bounds how long a new broker-only node waits
// for a bootstrap controller to tell the cluster id.
const clusterIDDiscoveryTimeout = 2 * time.Minute

// discoverClusterID asks the controllers in
// controller.quorum.bootstrap.servers for the cluster id (DescribeCluster
// with the controller endpoint type, KIP-919), in turn until one answers:
// Moldau derives a cluster's id from its voters, which such a node does
// not know (Kafka formats every node's dirs with the id instead).
func (b *Broker) discoverClusterID() (string, error) {
	servers := b.cfg.QuorumBootstrapServers
	if len(servers) == 0 {
		return "", errors.New("no controller.quorum.bootstrap.servers to ask for the cluster id")
	}
	deadline := time.Now().Add(clusterIDDiscoveryTimeout)
	var lastErr error
	for i := 0; time.Now().Before(deadline); i++ {
		addr := servers[i%len(servers)]
		ch := network.NewControllerChannel(b.cfg.NodeID, b.log, map[int32]string{0: addr}, func() int32 { return 0 }, nil)
		ch.SetDialer(b.controllerDial)
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = 2, endpointTypeController
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := ch.Send(ctx, req)
		cancel()
		ch.Close()
		if err == nil {
			resp := r.(*kmsg.DescribeClusterResponse)
			if err = kerr.ErrorForCode(resp.ErrorCode); err == nil && resp.ClusterID != "" {
				b.log.Info("learned the cluster id from a bootstrap controller", "controller", addr, "cluster_id", resp.ClusterID)
				return resp.ClusterID, nil
			}
		}
		lastErr = err
		if i%len(servers) == len(servers)-1 {
			b.log.Info("waiting for a bootstrap controller to tell the cluster id", "servers", servers, "err", lastErr)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return "", fmt.Errorf("no controller in controller.quorum.bootstrap.servers %v told the cluster id within %v: %v", servers, clusterIDDiscoveryTimeout, lastErr)
}

// endpointTypeController is DescribeCluster's controller endpoint type
// (KIP-919).
const endpointTypeController int8 = 2

// registerController is Kafka's ControllerRegistrationManager: a node with
// the controller role sends ControllerRegistration (API 70) to the active
// controller, with its controller listeners' endpoints and its features,
// until the metadata it has applied holds this incarnation's
// registration; it checks again every few seconds (a new leader, a
// restored snapshot).
func (b *Broker) registerController(done <-chan struct{}) {
	ctx, cancel := routine.Context(done)
	defer cancel()
	incarnation := uuid.Random()
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID, req.IncarnationID = b.cfg.NodeID, incarnation
	for _, l := range b.advertisedControllerListeners() {
		rl := kmsg.NewControllerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, l.Host, uint16(l.Port)
		rl.SecurityProtocol = securityProtocolIDs[b.cfg.SecurityProtocol(l.Name)]
		req.Listeners = append(req.Listeners, rl)
	}
	for _, f := range metadata.SupportedFeatures {
		rf := kmsg.NewControllerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		req.Features = append(req.Features, rf)
	}
	registered := func() bool {
		c := b.loader.Image().Controllers[b.cfg.NodeID]
		return c != nil && c.IncarnationID == uuid.UUID(incarnation)
	}
	for ctx.Err() == nil {
		wait := 5 * time.Second
		if !registered() {
			sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
			r, err := b.channel.Send(sctx, req)
			scancel()
			if err == nil {
				err = kerr.ErrorForCode(r.(*kmsg.ControllerRegistrationResponse).ErrorCode)
			}
			if err != nil && ctx.Err() == nil {
				b.log.Debug("controller registration failed; retrying", "err", err)
			}
			wait = 200 * time.Millisecond
		}
		sleepCtx(ctx, wait)
	}
}

// advertisedControllerListeners are this node's controller listeners as
// other nodes reach them: an empty host is the host name, port 0 the
// port bound (call once the controller socket listens).
func (b *Broker) advertisedControllerListeners() []config.Listener {
	out := slices.Clone(b.cfg.AdvertisedControllerListeners)
	for i, l := range out {
		if l.Host == "" {
			if h, err := os.Hostname(); err == nil && h != "" {
				out[i].Host = h
			} else {
				out[i].Host = "localhost"
			}
		}
		if l.Port == 0 && b.ctrlSocket != nil {
			if a, ok := b.ctrlSocket.Addr(l.Name).(*net.TCPAddr); ok && a != nil {
				out[i].Port = a.Port
			}
		}
	}
	return out
}
