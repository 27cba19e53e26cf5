package kapi

// DeleteGroups, versions 0 to 3.
//
//   - v1: no change on the wire.
//   - v2: flexible versions.
//   - v3: an error message per group (KIP-1043).
//
// Only empty groups may be deleted (NON_EMPTY_GROUP otherwise); a group
// that does not exist is GROUP_ID_NOT_FOUND. A deleted group's offsets and
// metadata get tombstones in __consumer_offsets, so it stays deleted after
// a restart. A group named twice is deleted once.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDeleteGroups(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	seen := map[string]bool{}
	var unique []string
	for _, g := range req.Groups {
		if !seen[g] {
			seen[g] = true
			unique = append(unique, g)
		}
	}
	ids, denied := splitGroups(h, rc, az.Delete, unique, func(g string) kmsg.DeleteGroupsResponseGroup {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		return rg
	})
	h.cfg.Groups.DeleteGroups(groupContext(rc), ids, func(gs []kmsg.DeleteGroupsResponseGroup) {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		resp.Groups = append(gs, denied...)
		rc.finish(resp)
	})
}
