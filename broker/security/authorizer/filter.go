package authorizer

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

// Filter is Kafka's AclBindingFilter: what DescribeAcls and DeleteAcls
// name. A nil string matches any value; ANY matches any code; the pattern
// type MATCH matches every pattern that would apply to the named resource
// (the literal name, the literal wildcard, and the prefixes of it).
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Matches is Kafka's AclBindingFilter.matches.
func (f *Filter) Matches(a metadata.ACL) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && int8(f.ResourceType) != a.ResourceType {
		return false
	}
	pt := kmsg.ACLResourcePatternType(a.PatternType)
	if f.PatternType != kmsg.ACLResourcePatternTypeAny && f.PatternType != kmsg.ACLResourcePatternTypeMatch && f.PatternType != pt {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case f.PatternType == kmsg.ACLResourcePatternTypeAny || f.PatternType == pt:
			if name != a.ResourceName {
				return false
			}
		case pt == Literal:
			if name != a.ResourceName && a.ResourceName != Wildcard {
				return false
			}
		case pt == Prefixed:
			if !strings.HasPrefix(name, a.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != a.Principal {
		return false
	}
	if f.Host != nil && *f.Host != a.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && int8(f.Operation) != a.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || int8(f.Permission) == a.Permission
}

// FilterUnknownCodes reports a filter naming a code Kafka refuses in a
// filter: UNKNOWN in any field (AclBindingFilter.findIndefiniteField).
func (f *Filter) FilterUnknownCodes() string {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown:
		return "Resource type UNKNOWN"
	case f.PatternType == kmsg.ACLResourcePatternTypeUnknown:
		return "Pattern type UNKNOWN"
	case f.Operation == kmsg.ACLOperationUnknown:
		return "Operation UNKNOWN"
	case f.Permission == kmsg.ACLPermissionTypeUnknown:
		return "Permission type UNKNOWN"
	}
	return ""
}

// ValidateNew is the validation of a new ACL (Kafka's AclApis and
// AclControlManager.validateNewAcl, and KafkaPrincipal parsing): "" if the
// ACL may be created, else why not.
func ValidateNew(a metadata.ACL) string {
	switch kmsg.ACLResourceType(a.ResourceType) {
	case Topic, Group, Cluster, TransactionalID, DelegationToken, User:
	default:
		return "Invalid resourceType " + kmsg.ACLResourceType(a.ResourceType).String()
	}
	switch kmsg.ACLResourcePatternType(a.PatternType) {
	case Literal, Prefixed:
	default:
		return "Invalid patternType " + kmsg.ACLResourcePatternType(a.PatternType).String()
	}
	switch op := kmsg.ACLOperation(a.Operation); {
	case op < All || op > DescribeTokens:
		return "Invalid operation " + op.String()
	}
	switch kmsg.ACLPermissionType(a.Permission) {
	case Deny, Allow:
	default:
		return "Invalid permissionType " + kmsg.ACLPermissionType(a.Permission).String()
	}
	if a.ResourceName == "" {
		return "Resource name should not be empty"
	}
	if kmsg.ACLResourceType(a.ResourceType) == Cluster && a.ResourceName != ClusterName {
		return "The only valid name for the CLUSTER resource is " + ClusterName
	}
	if typ, name, ok := strings.Cut(a.Principal, ":"); !ok || typ == "" || name == "" {
		return "Could not parse principal from `" + a.Principal + "` (no colon is found separating principal type from principal name)"
	}
	if a.Host == "" {
		return "Invalid empty host"
	}
	return ""
}
