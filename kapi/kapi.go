package kapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/quota"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/coordinator/group"
	"github.com/moldau/moldau/coordinator/share"
	"github.com/moldau/moldau/coordinator/txn"
	"github.com/moldau/moldau/replica"
	sharepart "github.com/moldau/moldau/replica/share"
)

// Endpoint is an advertised listener as it appears in Metadata and
// DescribeCluster.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
}

// Config wires a Handler to the rest of the broker. Every field is
// required unless noted.
type Config struct {
	NodeID    int32
	ClusterID string
	Rack      *string // optional
	Logger    *slog.Logger

	// Endpoints returns the advertised listeners of this broker.
	Endpoints func() []Endpoint

	Broker     *config.KafkaConfig // static and dynamic broker configs
	Metadata   MetadataCache       // topics, partitions, brokers, configs
	Controller ControllerChannel   // admin requests go to the active controller
	Replicas   *replica.Manager    // produce, fetch, list offsets, log dirs
	// BrokerEpoch is this broker's epoch from its registration (-1
	// before it registered); AllocateProducerIds carries it.
	BrokerEpoch func() int64
	// DelegationTokenHMAC is the HMAC of a delegation token id under
	// delegation.token.secret.key; nil: delegation tokens are disabled.
	DelegationTokenHMAC func(tokenID string) []byte
	// MutationQuotas are the controller mutation quotas (KIP-599); nil:
	// none.
	MutationQuotas *quota.MutationQuotas
	// ClientQuotas are the produce, fetch and request quotas
	// (client_quotas.go); nil: none.
	ClientQuotas *ClientQuotas
	// Groups is the group coordinator (FindCoordinator, the group and
	// offset APIs, TxnOffsetCommit).
	Groups *group.Service
	// Txn is the transaction coordinator (FindCoordinator, InitProducerId
	// and the transaction APIs).
	Txn *txn.Service
	// Share is the share coordinator (FindCoordinator key type 2 and the
	// share-group state APIs); nil: those APIs answer
	// COORDINATOR_NOT_AVAILABLE.
	Share *share.Service
	// VerifyTransactionalProduce, if set, is asked before the partitions
	// of a transactional produce are appended (KIP-890: the transaction
	// coordinator verifies them, or from Produce v12 adds them); done
	// gets the guards the appends must bring and the partitions that
	// must not be appended, with their errors.
	VerifyTransactionalProduce func(transactionalID string, producerID int64, producerEpoch int16, parts []TxnPartition, version int16, done func(TxnVerification))

	// CompleteGroupTransaction, when set, takes the transaction markers
	// WriteTxnMarkers carries for __consumer_offsets partitions (the
	// group coordinator writes them and applies the transaction's
	// offsets). Nil: they are appended to the partition like any other.
	CompleteGroupTransaction GroupTxnCompleter

	// SharePartitions is the share-partition manager (ShareFetch,
	// ShareAcknowledge); nil: those answer UNSUPPORTED_VERSION.
	SharePartitions *sharepart.Manager

	// Authorizer decides every request (authorizer.class.name); nil:
	// everything is allowed.
	Authorizer *authorizer.StandardAuthorizer

	// CountErrors, if set, is told the error codes of every response
	// (n of code for apiKey, NONE included): Kafka's RequestMetrics
	// ErrorsPerSec.
	CountErrors func(apiKey, code int16, n int)

	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Handler is the KafkaApis of Moldau: it decodes each request with kmsg,
// runs it and encodes the response. It is safe for concurrent use by the
// handler pool.
type Handler struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	sessions *fetchSessionCache
	// g runs the requests that wait on the controller (forwarded), off
	// the handler pool.
	g routine.Group
}

// Close waits for the forwarded requests still running (their context
// ends with the socket server's). Idempotent.
func (h *Handler) Close() { h.g.StopAndWait() }

// New returns a Handler.
func New(cfg Config) *Handler {
	h := &Handler{cfg: cfg, log: cfg.Logger, now: cfg.Now}
	// max.incremental.fetch.session.cache.slots, Kafka's default.
	h.sessions = newFetchSessionCache(1000)
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.now == nil {
		h.now = time.Now
	}
	return h
}

// MetadataCache is what kapi reads of the cluster metadata: the newest
// image this broker has applied (Kafka's KRaftMetadataCache).
type MetadataCache interface {
	Image() *metadata.Image
	// WaitFor waits until cond holds for the image (or ctx ends).
	WaitFor(ctx context.Context, cond func(*metadata.Image) bool) error
}

// ControllerChannel sends a request to the active controller and returns
// its response (Kafka's NodeToControllerChannelManager): over the
// controller listener, or in-process when the active controller is this
// node. It retries NOT_CONTROLLER and unreachable controllers until ctx
// ends.
type ControllerChannel interface {
	Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	// ActiveController is the id of the active controller, -1 if none
	// is known.
	ActiveController() int32
}

// image is the current metadata image.
func (h *Handler) image() *metadata.Image { return h.cfg.Metadata.Image() }

// RequestContext is what a handler knows about the request beyond its body.
type RequestContext struct {
	*Request
	ctx context.Context
	// closeAfter, when set by a handler before it answers nil, closes
	// the connection instead of staying silent (acks=0 produce errors).
	closeAfter string
	// sess is the authorizer's view of the request, once asked for.
	sess    *authorizer.Session
	h       *Handler
	respond func(*Response)
	// q is the request's use of the client quotas.
	q quotaState
}

// Context returns the request's context; the socket server cancels it when
// its shutdown completes or is forced.
func (rc *RequestContext) Context() context.Context { return rc.ctx }

// Handle decodes and serves one request. respond is called exactly once,
// possibly from another goroutine (a delayed fetch or produce completes
// later, off the handler pool, as in Kafka).
func (h *Handler) Handle(ctx context.Context, r *Request, respond func(*Response)) {
	a := lookupAPI(r.APIKey)
	if a == nil || r.APIVersion < a.min || r.APIVersion > a.max {
		if r.APIKey == apiVersionsKey {
			// ApiVersions for a version we do not know: answer in
			// the v0 format with UNSUPPORTED_VERSION and our
			// versions, so the client can pick one (KIP-511).
			respond(h.encode(r, h.apiVersionsUnsupported()))
			return
		}
		name := kmsg.NameForKey(r.APIKey)
		if a == nil {
			respond(&Response{Close: true, CloseReason: fmt.Sprintf("unknown API key %d", r.APIKey)})
			return
		}
		if r.APIVersion >= 0 && r.APIVersion < a.min && a.advertiseV0 {
			// Advertised but not served (Produce v0-2, KAFKA-18659):
			// Kafka's socket server closes the connection with this.
			respond(&Response{Close: true, CloseReason: fmt.Sprintf("Received request for api with key %d (%s) and unsupported version %d (versions %d to %d are served; older ones are advertised only for librdkafka's sake, KAFKA-18659)", r.APIKey, name, r.APIVersion, a.min, a.max)})
			return
		}
		respond(&Response{Close: true, CloseReason: fmt.Sprintf("unsupported version %d of %s (supported %d to %d)", r.APIVersion, name, a.min, a.max)})
		return
	}
	kreq, err := decodeRequest(r.APIKey, r.APIVersion, r.Body)
	if err != nil {
		respond(&Response{Close: true, CloseReason: err.Error()})
		return
	}
	rc := &RequestContext{Request: r, ctx: ctx, h: h, respond: respond}
	rc.q.start = h.now()
	if a.async != nil {
		a.async(h, rc, kreq)
		rc.q.handled.Store(max(1, int64(h.now().Sub(rc.q.start))))
		return
	}
	rc.finish(a.sync(h, rc, kreq))
}

// finish encodes and sends a handler's response. A nil response sends
// nothing (or closes the connection if closeAfter is set).
func (rc *RequestContext) finish(resp kmsg.Response) {
	if resp == nil {
		if rc.closeAfter != "" {
			rc.respond(&Response{Close: true, CloseReason: rc.closeAfter})
			return
		}
		// acks=0 Produce: muted without an answer when throttled.
		rc.respond(&Response{NoResponse: true, Throttle: rc.decideThrottle(0)})
		return
	}
	rc.respond(rc.encode(resp))
}

// encode frames a response: size, correlation id, header tags when the
// response header is flexible (never for ApiVersions), body.
func (h *Handler) encode(r *Request, resp kmsg.Response) *Response {
	resp.SetVersion(r.APIVersion)
	if r.APIKey == apiVersionsKey {
		if av := resp.(*kmsg.ApiVersionsResponse); av.ErrorCode == kerr.UnsupportedVersion.Code {
			resp.SetVersion(0)
		}
	}
	buf := make([]byte, 8, 64)
	be32(buf[4:], uint32(r.CorrelationID))
	if resp.IsFlexible() && r.APIKey != apiVersionsKey {
		buf = append(buf, 0) // empty tagged fields
	}
	buf = resp.AppendTo(buf)
	be32(buf, uint32(len(buf)-4))
	if h.cfg.CountErrors != nil {
		var c errorCounts
		c.count(resp)
		c.each(func(code int16, n int) { h.cfg.CountErrors(r.APIKey, code, n) })
	}
	return &Response{Buf: buf}
}

func be32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// ErrorCode converts an error from an inner package into a Kafka error code.
// Inner packages wrap kerr sentinels; anything else is UNKNOWN_SERVER_ERROR.
// This is the only place errors become codes.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// ErrorMessage returns the message to put in a response's ErrorMessage
// field: nil for no error, the error text otherwise.
func ErrorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// decodeRequest decodes a request body with kmsg. kmsg never trusts a
// length beyond the bytes that remain, so what it allocates is bounded by a
// small multiple of the frame size (fuzzed in FuzzDecodeRequest).
func decodeRequest(key, version int16, body []byte) (kmsg.Request, error) {
	kreq := kmsg.RequestForKey(key)
	if kreq == nil {
		return nil, fmt.Errorf("unknown API key %d", key)
	}
	kreq.SetVersion(version)
	if err := kreq.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("malformed %s v%d request: %v", kmsg.NameForKey(key), version, err)
	}
	return kreq, nil
}
