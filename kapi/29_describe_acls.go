package kapi

// DescribeAcls, versions 0-3 (v1 adds the pattern type, v2 is flexible, v3
// the USER resource type). Answered from this broker's image, as Kafka's
// StandardAuthorizer answers from its own copy of the ACLs. Needs DESCRIBE
// on the cluster; without an authorizer the answer is SECURITY_DISABLED.
//
// CreateAcls and DeleteAcls (30, 31; same versions) are decided by the
// controller (broker/controller/acls.go): the broker checks ALTER on the
// cluster, forwards, and waits until its own image shows the change, as
// Kafka's alterAclsPurgatory waits for the broker's authorizer.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	az "github.com/moldau/moldau/broker/security/authorizer"
)

var errSecurityDisabled = apierr.New(kerr.SecurityDisabled, "No Authorizer is configured on the broker")

func (h *Handler) handleDescribeAcls(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(err error) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		return resp
	}
	if err := h.authorizeCluster(rc, az.Describe); err != nil {
		return fail(err)
	}
	if h.cfg.Authorizer == nil {
		return fail(errSecurityDisabled)
	}
	f := az.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if req.Version == 0 {
		f.PatternType = az.Literal
	}
	if msg := f.FilterUnknownCodes(); msg != "" {
		return fail(apierr.Errorf(kerr.InvalidRequest, "The filter has an unknown field: %s", msg))
	}
	acls := h.image().ACLs
	type key struct {
		rt   int8
		name string
		pt   int8
	}
	// The ids come sorted by resource, so each resource's ACLs are
	// gathered in order.
	byRes := map[key]*kmsg.DescribeACLsResponseResource{}
	var order []key
	for _, id := range acls.SortedIDs() {
		a := acls.ByID[id]
		if !f.Matches(a) {
			continue
		}
		k := key{a.ResourceType, a.ResourceName, a.PatternType}
		r := byRes[k]
		if r == nil {
			nr := kmsg.NewDescribeACLsResponseResource()
			nr.ResourceType, nr.ResourceName, nr.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			r = &nr
			byRes[k] = r
			order = append(order, k)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		r.ACLs = append(r.ACLs, e)
	}
	for _, k := range order {
		resp.Resources = append(resp.Resources, *byRes[k])
	}
	return resp
}

func (h *Handler) handleCreateAcls(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreateACLsRequest)
	if req.Version == 0 {
		for i := range req.Creations {
			req.Creations[i].ResourcePatternType = az.Literal
		}
	}
	return h.alterACLs(rc, req, func(r kmsg.Response) func(*metadata.Image) bool {
		resp := r.(*kmsg.CreateACLsResponse)
		var want []metadata.ACL
		for i, c := range req.Creations {
			if i < len(resp.Results) && resp.Results[i].ErrorCode == 0 {
				want = append(want, aclOf(c.ResourceType, c.ResourceName, c.ResourcePatternType, c.Principal, c.Host, c.Operation, c.PermissionType))
			}
		}
		return func(im *metadata.Image) bool {
			have := im.ACLs.Values()
			for _, a := range want {
				if !have[a] {
					return false
				}
			}
			return true
		}
	})
}

func (h *Handler) handleDeleteAcls(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DeleteACLsRequest)
	if req.Version == 0 {
		for i := range req.Filters {
			req.Filters[i].ResourcePatternType = az.Literal
		}
	}
	return h.alterACLs(rc, req, func(r kmsg.Response) func(*metadata.Image) bool {
		var gone []metadata.ACL
		for _, fr := range r.(*kmsg.DeleteACLsResponse).Results {
			for _, m := range fr.MatchingACLs {
				gone = append(gone, aclOf(m.ResourceType, m.ResourceName, m.ResourcePatternType, m.Principal, m.Host, m.Operation, m.PermissionType))
			}
		}
		return func(im *metadata.Image) bool {
			have := im.ACLs.Values()
			for _, a := range gone {
				if have[a] {
					return false
				}
			}
			return true
		}
	})
}

// alterACLs checks ALTER on the cluster, forwards the change to the
// controller and waits until this broker's image has settled as the
// answer says (Kafka's alterAclsPurgatory, which waits for the broker's
// own authorizer).
func (h *Handler) alterACLs(rc *RequestContext, req kmsg.Request, settled func(kmsg.Response) func(*metadata.Image) bool) kmsg.Response {
	if err := h.authorizeCluster(rc, az.Alter); err != nil {
		return errorResponse(req, err)
	}
	if h.cfg.Authorizer == nil {
		return errorResponse(req, errSecurityDisabled)
	}
	r, err := h.forward(rc.Context(), req, 0)
	if err != nil {
		return errorResponse(req, err)
	}
	h.waitForMetadata(rc.Context(), defaultForwardTimeout, settled(r))
	return r
}

func aclOf(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) metadata.ACL {
	return metadata.ACL{ResourceType: int8(rt), ResourceName: name, PatternType: int8(pt), Principal: principal, Host: host, Operation: int8(op), Permission: int8(perm)}
}
