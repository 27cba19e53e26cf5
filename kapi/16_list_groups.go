package kapi

// ListGroups, versions 0 to 5.
//
//   - v1: the response adds throttle_time_ms.
//   - v2: no change on the wire.
//   - v3: flexible versions.
//   - v4: states_filter; the response adds each group's state (KIP-518).
//   - v5: types_filter (classic, consumer); the response adds each
//     group's type (KIP-848).
//
// Every group coordinated by this broker is listed.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleListGroups(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ListGroupsRequest)
	h.cfg.Groups.ListGroups(groupContext(rc), req, func(resp *kmsg.ListGroupsResponse) {
		// As Kafka's: DESCRIBE on the cluster lists every group, else
		// those the principal may describe.
		if !h.authorizeQuiet(rc, az.Describe, az.Cluster, az.ClusterName) {
			kept := resp.Groups[:0]
			for _, g := range resp.Groups {
				if h.authorizeQuiet(rc, az.Describe, az.Group, g.Group) {
					kept = append(kept, g)
				}
			}
			resp.Groups = kept
		}
		rc.finish(resp)
	})
}
