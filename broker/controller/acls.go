package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/broker/uuid"
)

// ACLs (Kafka's AclControlManager): a creation that is valid and not
// already present becomes an AccessControlEntryRecord with a fresh id
// (one already present succeeds with no record); a deletion filter
// removes every ACL it matches, one RemoveAccessControlEntryRecord each,
// and answers them. A filter that matches an ACL an earlier filter of the
// request removed answers it again, as Kafka's does, without a second
// record. The broker checked ALTER on the cluster before forwarding.

// maxACLRecordsPerRequest bounds the records one request may write
// (Kafka's MAX_RECORDS_PER_USER_OP).
const maxACLRecordsPerRequest = 10000

// CreateAcls adds ACLs.
func (c *QuorumController) CreateAcls(ctx context.Context, req *kmsg.CreateACLsRequest) (*kmsg.CreateACLsResponse, error) {
	resp, _, err := write(ctx, c, "createAcls", func(im *metadata.Image) (writeResult[*kmsg.CreateACLsResponse], error) {
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		existing := im.ACLs.Values()
		var recs []metadata.Record
		for _, cr := range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			a := metadata.ACL{ResourceType: int8(cr.ResourceType), ResourceName: cr.ResourceName, PatternType: int8(cr.ResourcePatternType),
				Principal: cr.Principal, Host: cr.Host, Operation: int8(cr.Operation), Permission: int8(cr.PermissionType)}
			if msg := authorizer.ValidateNew(a); msg != "" {
				r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, &msg
			} else if len(recs) >= maxACLRecordsPerRequest {
				msg := "Too many ACLs in one request"
				r.ErrorCode, r.ErrorMessage = kerr.PolicyViolation.Code, &msg
			} else if !existing[a] {
				existing[a] = true
				recs = append(recs, &metadata.AccessControlEntryRecord{ID: newACLID(im), ACL: a})
			}
			resp.Results = append(resp.Results, r)
		}
		return writeResult[*kmsg.CreateACLsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

// DeleteAcls removes the ACLs the filters match.
func (c *QuorumController) DeleteAcls(ctx context.Context, req *kmsg.DeleteACLsRequest) (*kmsg.DeleteACLsResponse, error) {
	resp, _, err := write(ctx, c, "deleteAcls", func(im *metadata.Image) (writeResult[*kmsg.DeleteACLsResponse], error) {
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		removed := map[uuid.UUID]bool{}
		var recs []metadata.Record
		ids := im.ACLs.SortedIDs()
		for _, rf := range req.Filters {
			fr := kmsg.NewDeleteACLsResponseResult()
			f := authorizer.Filter{ResourceType: rf.ResourceType, ResourceName: rf.ResourceName, PatternType: rf.ResourcePatternType,
				Principal: rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType}
			if msg := f.FilterUnknownCodes(); msg != "" {
				msg = "The filter has an unknown field: " + msg
				fr.ErrorCode, fr.ErrorMessage = kerr.InvalidRequest.Code, &msg
				resp.Results = append(resp.Results, fr)
				continue
			}
			for _, id := range ids {
				a := im.ACLs.ByID[id]
				if !f.Matches(a) {
					continue
				}
				if !removed[id] {
					removed[id] = true
					recs = append(recs, &metadata.RemoveAccessControlEntryRecord{ID: id})
				}
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
				m.Principal, m.Host = a.Principal, a.Host
				m.Operation, m.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
				fr.MatchingACLs = append(fr.MatchingACLs, m)
			}
			resp.Results = append(resp.Results, fr)
		}
		return writeResult[*kmsg.DeleteACLsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

// newACLID is a random id no ACL has.
func newACLID(im *metadata.Image) uuid.UUID {
	for {
		id := uuid.Random()
		if im.ACLs == nil {
			return id
		}
		if _, ok := im.ACLs.ByID[id]; !ok {
			return id
		}
	}
}
