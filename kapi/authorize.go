package kapi

// Authorization (Kafka's AuthHelper): every handler asks here before it
// acts, with the checks Kafka's KafkaApis makes for the API. Without an
// authorizer (authorizer.class.name unset) everything is allowed and the
// authorized-operations fields report every operation the resource
// supports, as Kafka does.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	az "github.com/moldau/moldau/broker/security/authorizer"
)

// session is who asks, for the authorizer: worked out once per request
// (the client's address as a string is an allocation), however many
// resources the request names.
func (rc *RequestContext) session() az.Session {
	if rc.sess == nil {
		s := sessionOf(rc.Request)
		rc.sess = &s
	}
	return *rc.sess
}

func sessionOf(r *Request) az.Session {
	s := az.Session{Principal: r.principal(), API: r.APIKey}
	switch a := r.ClientAddr.(type) {
	case *net.TCPAddr:
		s.Host = a.IP.String()
	case nil:
	default:
		if h, _, err := net.SplitHostPort(a.String()); err == nil {
			s.Host = h
		}
	}
	return s
}

// authorize reports whether the request may perform op on the resource,
// logging a denial (Kafka's authorize with logIfDenied).
func (h *Handler) authorize(rc *RequestContext, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if h.cfg.Authorizer == nil {
		return true
	}
	return h.cfg.Authorizer.Authorize(rc.session(), az.Action{Operation: op, ResourceType: rt, Name: name, RefCount: 1, LogIfDenied: true})
}

// authorizeQuiet is authorize without the denial log (Kafka's
// logIfDenied = false: listings filtered by what the principal may see).
func (h *Handler) authorizeQuiet(rc *RequestContext, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if h.cfg.Authorizer == nil {
		return true
	}
	return h.cfg.Authorizer.Authorize(rc.session(), az.Action{Operation: op, ResourceType: rt, Name: name, RefCount: 1})
}

// authorizeTopics returns, of the named topics, those the request may
// perform op on (Kafka's filterByAuthorized: one decision per distinct
// name, however many times the request names it).
func (h *Handler) authorizeTopics(rc *RequestContext, op kmsg.ACLOperation, names func(yield func(string) bool)) map[string]bool {
	out := map[string]bool{}
	if h.cfg.Authorizer == nil {
		for n := range names {
			out[n] = true
		}
		return out
	}
	seen := map[string]bool{}
	for n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if h.authorize(rc, op, az.Topic, n) {
			out[n] = true
		}
	}
	return out
}

// mayCreateTopic is the right to create a topic: CREATE on the cluster,
// or else on the topic (Kafka's CreateTopics and auto-creation).
func (h *Handler) mayCreateTopic(rc *RequestContext, name string) bool {
	return h.authorizeQuiet(rc, az.Create, az.Cluster, az.ClusterName) || h.authorize(rc, az.Create, az.Topic, name)
}

// authorizeCluster is Kafka's authorizeClusterOperation: nil, or
// CLUSTER_AUTHORIZATION_FAILED.
func (h *Handler) authorizeCluster(rc *RequestContext, op kmsg.ACLOperation) error {
	if h.authorize(rc, op, az.Cluster, az.ClusterName) {
		return nil
	}
	return apierr.Errorf(kerr.ClusterAuthorizationFailed, "Request %s is not authorized.", kmsg.NameForKey(rc.APIKey))
}

// clusterOp wraps a handler of a request that needs op on the cluster
// (Kafka's authorizeClusterOperation before the handler runs): refused,
// the request is answered CLUSTER_AUTHORIZATION_FAILED in every error
// field.
func clusterOp(op kmsg.ACLOperation, fn func(*Handler, *RequestContext, kmsg.Request) kmsg.Response) func(*Handler, *RequestContext, kmsg.Request) kmsg.Response {
	return func(h *Handler, rc *RequestContext, req kmsg.Request) kmsg.Response {
		if err := h.authorizeCluster(rc, op); err != nil {
			if resp := errorResponse(req, err); resp != nil {
				return resp
			}
			h.log.Error("no error response for a refused request", "request", kmsg.NameForKey(req.Key()))
			return nil
		}
		return fn(h, rc, req)
	}
}

// authorizedOperations is the bit field of what the request's principal
// may do on the resource.
func (h *Handler) authorizedOperations(rc *RequestContext, rt kmsg.ACLResourceType, name string) int32 {
	if h.cfg.Authorizer == nil {
		return az.AllOperations(rt)
	}
	return h.cfg.Authorizer.AuthorizedOperations(rc.session(), rt, name)
}

// authorizeByResourceType is Kafka's authorizeByResourceType.
func (h *Handler) authorizeByResourceType(rc *RequestContext, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if h.cfg.Authorizer == nil {
		return true
	}
	return h.cfg.Authorizer.AuthorizeByResourceType(rc.session(), op, rt)
}

// authorizeConfigResource is the right to describe (DESCRIBE_CONFIGS) or
// alter (ALTER_CONFIGS) a config resource, as Kafka's: a topic's or
// group's on it, the others' (BROKER, BROKER_LOGGER, CLIENT_METRICS) on
// the cluster. nil, or the resource type's authorization error.
func (h *Handler) authorizeConfigResource(rc *RequestContext, op kmsg.ACLOperation, t kmsg.ConfigResourceType, name string) error {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		if !h.authorize(rc, op, az.Topic, name) {
			return errTopicAuthorization
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !h.authorize(rc, op, az.Group, name) {
			return errGroupAuthorization
		}
	default:
		return h.authorizeCluster(rc, op)
	}
	return nil
}

// Errors of the authorization checks, with Kafka's messages.
var (
	errTopicAuthorization = apierr.New(kerr.TopicAuthorizationFailed, "Topic authorization failed.")
	errGroupAuthorization = apierr.New(kerr.GroupAuthorizationFailed, "Group authorization failed.")
	errTxnIDAuthorization = apierr.New(kerr.TransactionalIDAuthorizationFailed, "Transactional ID authorization failed.")
)
