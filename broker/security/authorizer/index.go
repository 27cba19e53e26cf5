package authorizer

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

// index is one ACL set, arranged for decisions: per resource type, the
// LITERAL ACLs by name (the wildcard * among them) and the PREFIXED ACLs
// by prefix.
type index struct {
	src    *metadata.ACLs
	byType map[kmsg.ACLResourceType]*typeIndex
}

type typeIndex struct {
	literal  map[string][]metadata.ACL
	prefixed map[string][]metadata.ACL
	// maxPrefix is the longest prefix, so that a long resource name
	// costs no more lookups than the longest prefix has bytes.
	maxPrefix int
}

func buildIndex(set *metadata.ACLs) *index {
	ix := &index{src: set, byType: map[kmsg.ACLResourceType]*typeIndex{}}
	if set == nil {
		return ix
	}
	for _, acl := range set.ByID {
		rt := kmsg.ACLResourceType(acl.ResourceType)
		t := ix.byType[rt]
		if t == nil {
			t = &typeIndex{literal: map[string][]metadata.ACL{}, prefixed: map[string][]metadata.ACL{}}
			ix.byType[rt] = t
		}
		switch kmsg.ACLResourcePatternType(acl.PatternType) {
		case Literal:
			t.literal[acl.ResourceName] = append(t.literal[acl.ResourceName], acl)
		case Prefixed:
			t.prefixed[acl.ResourceName] = append(t.prefixed[acl.ResourceName], acl)
			t.maxPrefix = max(t.maxPrefix, len(acl.ResourceName))
		}
	}
	return ix
}

// rule is what decided (for the denial log).
type rule struct {
	kind    int
	allowed bool
	acl     metadata.ACL
}

const (
	ruleDefault = iota
	ruleSuperUser
	ruleACL
)

func (r rule) String() string {
	switch r.kind {
	case ruleSuperUser:
		return "SuperUser"
	case ruleACL:
		a := r.acl
		return fmt.Sprintf("MatchingAcl(acl=StandardAcl(resourceType=%s, resourceName=%s, patternType=%s, principal=%s, host=%s, operation=%s, permissionType=%s))",
			kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType), a.Principal, a.Host,
			kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission))
	}
	if r.allowed {
		return "DefaultAllow"
	}
	return "DefaultDeny"
}

// matcher gathers the result over the ACLs that apply to one resource.
type matcher struct {
	s           Session
	op          kmsg.ACLOperation
	deny, allow *metadata.ACL
	hasACLs     bool // some ACL names the resource, whoever it is for
}

// check looks at the ACLs of one pattern that matched the resource; it
// reports whether a DENY was found (nothing else can change the outcome).
func (m *matcher) check(acls []metadata.ACL) bool {
	for i := range acls {
		acl := &acls[i]
		m.hasACLs = true
		switch result(acl, m.s, m.op) {
		case Allow:
			m.allow = acl
		case Deny:
			m.deny = acl
			return true
		}
	}
	return false
}

// result is Kafka's StandardAuthorizerData.findResult: ALLOW or DENY if
// the ACL applies to the session and operation, else UNKNOWN.
func result(acl *metadata.ACL, s Session, op kmsg.ACLOperation) kmsg.ACLPermissionType {
	if acl.Principal != s.Principal && acl.Principal != WildcardPrincipal {
		return kmsg.ACLPermissionTypeUnknown
	}
	if acl.Host != Wildcard && acl.Host != s.Host {
		return kmsg.ACLPermissionTypeUnknown
	}
	perm := kmsg.ACLPermissionType(acl.Permission)
	if aop := kmsg.ACLOperation(acl.Operation); aop != All {
		if perm == Allow {
			switch op {
			case Describe:
				if aop != Describe && aop != Read && aop != Write && aop != Delete && aop != Alter {
					return kmsg.ACLPermissionTypeUnknown
				}
			case DescribeConfigs:
				if aop != DescribeConfigs && aop != AlterConfigs {
					return kmsg.ACLPermissionTypeUnknown
				}
			default:
				if aop != op {
					return kmsg.ACLPermissionTypeUnknown
				}
			}
		} else if aop != op {
			return kmsg.ACLPermissionTypeUnknown
		}
	}
	if perm == Allow || perm == Deny {
		return perm
	}
	return kmsg.ACLPermissionTypeUnknown
}

// find decides one action on the resource's ACLs: its literal name and
// the prefixes of it first, then the literal wildcard.
func (ix *index) find(s Session, act Action, allowNoACL bool) rule {
	m := matcher{s: s, op: act.Operation}
	if t := ix.byType[act.ResourceType]; t != nil {
		denied := m.check(t.literal[act.Name])
		for n := 1; !denied && n <= len(act.Name) && n <= t.maxPrefix; n++ {
			denied = m.check(t.prefixed[act.Name[:n]])
		}
		if !denied && act.Name != Wildcard {
			m.check(t.literal[Wildcard])
		}
	}
	switch {
	case m.deny != nil:
		return rule{kind: ruleACL, acl: *m.deny}
	case m.allow != nil:
		return rule{kind: ruleACL, allowed: true, acl: *m.allow}
	case !m.hasACLs:
		return rule{kind: ruleDefault, allowed: allowNoACL}
	}
	return rule{kind: ruleDefault}
}

// byResourceType is the ACL part of Kafka's authorizeByResourceType: an
// ALLOW for the principal on some pattern of the type that no DENY
// dominates (a DENY on the literal wildcard denies all).
func (ix *index) byResourceType(s Session, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	t := ix.byType[rt]
	if t == nil {
		return false
	}
	applies := func(acl *metadata.ACL) bool {
		return (acl.Host == Wildcard || acl.Host == s.Host) &&
			(acl.Principal == s.Principal || acl.Principal == WildcardPrincipal) &&
			(kmsg.ACLOperation(acl.Operation) == op || kmsg.ACLOperation(acl.Operation) == All)
	}
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefix []string
	for name, acls := range t.literal {
		for i := range acls {
			if !applies(&acls[i]) {
				continue
			}
			switch kmsg.ACLPermissionType(acls[i].Permission) {
			case Deny:
				if name == Wildcard {
					return false
				}
				denyLiteral[name] = true
			case Allow:
				allowLiteral = append(allowLiteral, name)
			}
		}
	}
	for name, acls := range t.prefixed {
		for i := range acls {
			if !applies(&acls[i]) {
				continue
			}
			switch kmsg.ACLPermissionType(acls[i].Permission) {
			case Deny:
				denyPrefix[name] = true
			case Allow:
				allowPrefix = append(allowPrefix, name)
			}
		}
	}
	for _, name := range allowLiteral {
		if name == Wildcard {
			return true
		}
	}
	dominated := func(name string) bool {
		for n := 1; n <= len(name); n++ {
			if denyPrefix[name[:n]] {
				return true
			}
		}
		return false
	}
	for _, name := range allowLiteral {
		if !denyLiteral[name] && !dominated(name) {
			return true
		}
	}
	for _, name := range allowPrefix {
		if !dominated(name) {
			return true
		}
	}
	return false
}
