package authorizer

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

// ClassName is the authorizer.class.name that enables the authorizer.
const ClassName = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// The codes the authorizer works with, as kmsg names them.
const (
	Any             = kmsg.ACLOperationAny
	All             = kmsg.ACLOperationAll
	Read            = kmsg.ACLOperationRead
	Write           = kmsg.ACLOperationWrite
	Create          = kmsg.ACLOperationCreate
	Delete          = kmsg.ACLOperationDelete
	Alter           = kmsg.ACLOperationAlter
	Describe        = kmsg.ACLOperationDescribe
	ClusterAction   = kmsg.ACLOperationClusterAction
	DescribeConfigs = kmsg.ACLOperationDescribeConfigs
	AlterConfigs    = kmsg.ACLOperationAlterConfigs
	IdempotentWrite = kmsg.ACLOperationIdempotentWrite
	CreateTokens    = kmsg.ACLOperationCreateTokens
	DescribeTokens  = kmsg.ACLOperationDescribeTokens

	Topic           = kmsg.ACLResourceTypeTopic
	Group           = kmsg.ACLResourceTypeGroup
	Cluster         = kmsg.ACLResourceTypeCluster
	TransactionalID = kmsg.ACLResourceTypeTransactionalId
	DelegationToken = kmsg.ACLResourceTypeDelegationToken
	User            = kmsg.ACLResourceTypeUser

	Literal  = kmsg.ACLResourcePatternTypeLiteral
	Prefixed = kmsg.ACLResourcePatternTypePrefixed

	Deny  = kmsg.ACLPermissionTypeDeny
	Allow = kmsg.ACLPermissionTypeAllow
)

// ClusterName is the name of the one CLUSTER resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal name and host that match all.
const Wildcard = "*"

// WildcardPrincipal is the principal of ACLs that apply to everyone.
const WildcardPrincipal = "User:*"

// Config configures a StandardAuthorizer.
type Config struct {
	// ACLs returns the current image's ACL set.
	ACLs func() *metadata.ACLs
	// SuperUsers are allowed everything (super.users).
	SuperUsers []string
	// AllowEveryoneIfNoACLFound (allow.everyone.if.no.acl.found).
	AllowEveryoneIfNoACLFound bool
	Logger                    *slog.Logger
}

// StandardAuthorizer decides on the image's ACLs. Safe for concurrent use.
type StandardAuthorizer struct {
	acls       func() *metadata.ACLs
	superUsers map[string]bool
	allowNoACL bool
	log        *slog.Logger

	idx atomic.Pointer[index]
	mu  sync.Mutex // serializes index rebuilds
}

// New returns an authorizer.
func New(cfg Config) *StandardAuthorizer {
	a := &StandardAuthorizer{acls: cfg.ACLs, superUsers: map[string]bool{}, allowNoACL: cfg.AllowEveryoneIfNoACLFound, log: cfg.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	for _, u := range cfg.SuperUsers {
		if u = strings.TrimSpace(u); u != "" {
			a.superUsers[u] = true
		}
	}
	return a
}

// ParseSuperUsers splits super.users (principals separated by ';').
func ParseSuperUsers(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Session is who asks: the authenticated principal ("User:alice"), the
// client's address, and the request (for the denial log).
type Session struct {
	Principal string
	Host      string
	API       int16
}

// Action is what is asked (Kafka's Action): an operation on a literal
// resource. RefCount is how many times the request names it (for the log).
type Action struct {
	Operation    kmsg.ACLOperation
	ResourceType kmsg.ACLResourceType
	Name         string
	RefCount     int
	LogIfAllowed bool
	LogIfDenied  bool
}

// IsSuperUser reports whether the principal is in super.users.
func (a *StandardAuthorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize decides one action.
func (a *StandardAuthorizer) Authorize(s Session, act Action) bool {
	var r rule
	if a.superUsers[s.Principal] {
		r = rule{kind: ruleSuperUser, allowed: true}
	} else {
		r = a.index().find(s, act, a.allowNoACL)
	}
	a.audit(s, act, r)
	return r.allowed
}

// AuthorizeByResourceType reports whether the principal may perform op on
// some resource of the type: Kafka's Authorizer.authorizeByResourceType.
func (a *StandardAuthorizer) AuthorizeByResourceType(s Session, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if a.Authorize(s, Action{Operation: op, ResourceType: rt, Name: "hardcode", RefCount: 0, LogIfAllowed: true}) {
		return true
	}
	return a.index().byResourceType(s, op, rt)
}

// index returns the index of the current ACL set, rebuilding it when the
// set changed.
func (a *StandardAuthorizer) index() *index {
	set := a.acls()
	if ix := a.idx.Load(); ix != nil && ix.src == set {
		return ix
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	set = a.acls()
	if ix := a.idx.Load(); ix != nil && ix.src == set {
		return ix
	}
	ix := buildIndex(set)
	a.idx.Store(ix)
	return ix
}

func (a *StandardAuthorizer) audit(s Session, act Action, r rule) {
	if r.allowed && !act.LogIfAllowed || !r.allowed && !act.LogIfDenied {
		return
	}
	level := slog.LevelInfo
	if r.allowed {
		level = slog.LevelDebug
	}
	if !a.log.Enabled(context.Background(), level) {
		return
	}
	verdict := "Denied"
	if r.allowed {
		verdict = "Allowed"
	}
	a.log.Log(context.Background(), level, fmt.Sprintf("Principal = %s is %s operation = %s from host = %s on resource = %s:LITERAL:%s for request = %s with resourceRefCount = %d based on rule %s",
		s.Principal, verdict, act.Operation, s.Host, ResourceTypeName(act.ResourceType), act.Name, kmsg.NameForKey(s.API), act.RefCount, r),
		"logger", "kafka.authorizer.logger")
}

// SupportedOperations are the operations a resource type has (Kafka's
// AclEntry.supportedOperations).
func SupportedOperations(rt kmsg.ACLResourceType) []kmsg.ACLOperation {
	switch rt {
	case Topic:
		return []kmsg.ACLOperation{Read, Write, Create, Describe, Delete, Alter, DescribeConfigs, AlterConfigs}
	case Group:
		return []kmsg.ACLOperation{Read, Describe, Delete, DescribeConfigs, AlterConfigs}
	case Cluster:
		return []kmsg.ACLOperation{Create, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, Alter, Describe}
	case TransactionalID:
		return []kmsg.ACLOperation{Describe, Write}
	case DelegationToken:
		return []kmsg.ACLOperation{Describe}
	case User:
		return []kmsg.ACLOperation{CreateTokens, DescribeTokens}
	}
	return nil
}

// AllOperations is the authorized-operations bit field of every operation
// the resource type supports (what is reported without an authorizer).
func AllOperations(rt kmsg.ACLResourceType) int32 {
	var bits int32
	for _, op := range SupportedOperations(rt) {
		bits |= 1 << op
	}
	return bits
}

// AuthorizedOperations is the bit field of the operations on the resource
// the principal may perform (Kafka's AuthHelper.authorizedOperations).
func (a *StandardAuthorizer) AuthorizedOperations(s Session, rt kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range SupportedOperations(rt) {
		if a.Authorize(s, Action{Operation: op, ResourceType: rt, Name: name, RefCount: 1}) {
			bits |= 1 << op
		}
	}
	return bits
}

// ResourceTypeName is Kafka's name of a resource type as the audit log
// prints it (SecurityUtils.resourceTypeName: Topic, Group, Cluster,
// TransactionalId, DelegationToken, User).
func ResourceTypeName(rt kmsg.ACLResourceType) string {
	switch rt {
	case Topic:
		return "Topic"
	case Group:
		return "Group"
	case Cluster:
		return "Cluster"
	case TransactionalID:
		return "TransactionalId"
	case DelegationToken:
		return "DelegationToken"
	case User:
		return "User"
	}
	return rt.String()
}
