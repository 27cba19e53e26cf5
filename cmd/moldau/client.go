package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultBrokers is used when neither --brokers nor MOLDAU_BROKERS is set.
const defaultBrokers = "localhost:9092"

// clientFlags are the connection flags of every client command.
type clientFlags struct {
	brokers       string
	dialTimeout   time.Duration
	timeout       time.Duration
	commandConfig string // --command-config: Kafka client properties
}

// commandConfigHelp documents --command-config.
const commandConfigHelp = "file of Kafka client properties: security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), sasl.mechanism and sasl.jaas.config (username, password), ssl.ca.location, ssl.certificate.location, ssl.key.location (PEM), ssl.endpoint.identification.algorithm"

func (c *clientFlags) register(fs *pflag.FlagSet, getenv func(string) string) {
	def := defaultBrokers
	if v := strings.TrimSpace(getenv("MOLDAU_BROKERS")); v != "" {
		def = v
	}
	fs.StringVarP(&c.brokers, "brokers", "b", def, "comma-separated host:port list of brokers to bootstrap from (env MOLDAU_BROKERS)")
	fs.DurationVar(&c.dialTimeout, "dial-timeout", 3*time.Second, "how long to wait for a TCP connection to a broker")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "how long requests may take, retries included (not the time consume or produce run)")
	fs.StringVar(&c.commandConfig, "command-config", "", commandConfigHelp)
}

func (c *clientFlags) seeds() []string { return hostList(c.brokers) }

// hostList splits a comma-separated host:port list, blanks left out.
func hostList(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// newClient returns a kgo client for the command's brokers after checking
// that one of them answers, so an unreachable cluster is one clear error
// after at most --dial-timeout per seed broker, not a long retry loop.
func (e *env) newClient(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds := e.client.seeds()
	if len(seeds) == 0 {
		return nil, usageErrorf(e, "--brokers is empty")
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("moldau-cli"),
		kgo.DialTimeout(e.client.dialTimeout),
		kgo.RetryTimeout(e.client.timeout),
	}
	security, err := commandConfigOpts(e.client.commandConfig)
	if err != nil {
		return nil, usageErrorf(e, "%v", err)
	}
	base = append(base, security...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, usageErrorf(e, "%v", err)
	}
	// A broker answers Metadata in milliseconds; one that accepted the
	// connection but says nothing is not a Kafka listener we can use.
	answer := min(e.client.timeout, 10*time.Second)
	pctx, cancel := context.WithTimeout(ctx, e.client.dialTimeout*time.Duration(len(seeds))+answer)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, connectError(e.client.brokers, e.client.dialTimeout, answer, err)
	}
	return cl, nil
}

// newAdmin returns an admin client and the kgo client under it; closing
// the kgo client closes both.
func (e *env) newAdmin(ctx context.Context) (*kadm.Client, *kgo.Client, error) {
	cl, err := e.newClient(ctx)
	if err != nil {
		return nil, nil, err
	}
	return adminFor(e, cl), cl, nil
}

// withAdmin runs fn with an admin client (closed afterwards) and a context
// bounded by --timeout: the frame of every admin command.
func (e *env) withAdmin(ctx context.Context, fn func(rctx context.Context, adm *kadm.Client, cl *kgo.Client) error) error {
	adm, cl, err := e.newAdmin(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := e.requestCtx(ctx)
	defer cancel()
	return fn(rctx, adm, cl)
}

// adminFor wraps cl in an admin client whose broker-side timeouts are
// --timeout.
func adminFor(e *env, cl *kgo.Client) *kadm.Client {
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(e.client.timeout / time.Millisecond))
	return adm
}

// requestCtx bounds one administrative operation by --timeout.
func (e *env) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.client.timeout)
}

// connectError turns a failed first contact into one line naming the
// brokers and the cause.
func connectError(brokers string, dialTimeout, answer time.Duration, err error) error {
	cause := err.Error()
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var eofErr *kgo.ErrFirstReadEOF
	switch {
	case errors.As(err, &dnsErr):
		cause = "cannot resolve host " + dnsErr.Name
	case errors.Is(err, syscall.ECONNREFUSED):
		cause = "connection refused"
	case errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Timeout():
		cause = fmt.Sprintf("no connection within %v (--dial-timeout)", dialTimeout)
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		cause = fmt.Sprintf("connected, but no answer within %v: is this a Kafka listener?", answer)
	case errors.As(err, &eofErr):
		cause = "the connection was closed on its first read: is this a Kafka listener, and does it need TLS or SASL?"
	case errors.As(err, &opErr) && opErr.Err != nil:
		cause = opErr.Err.Error()
	}
	return fmt.Errorf("cannot connect to any broker at %s: %s", brokers, cause)
}

// requireAPI checks that the cluster serves an API (by key) and returns an
// error naming the feature if it does not.
func requireAPI(ctx context.Context, cl *kgo.Client, key int16, feature string) error {
	ok, err := supportsAPI(ctx, cl, key)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: not supported by this cluster (it does not serve %s)", feature, kmsg.NameForKey(key))
	}
	return nil
}

// supportsAPI asks one broker for its ApiVersions.
func supportsAPI(ctx context.Context, cl *kgo.Client, key int16) (bool, error) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return false, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return false, err
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return true, nil
		}
	}
	return false, nil
}

// subjectError is an error about one named thing (a topic, a group), so it
// can be reported as one line naming it.
type subjectError struct {
	kind, name string // "topic", "orders"
	err        error
	msg        string // the broker's error message, if any
}

func (e *subjectError) Error() string {
	var ke *kerr.Error
	if errors.As(e.err, &ke) {
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID:
			return fmt.Sprintf("%s %q does not exist", e.kind, e.name)
		case kerr.GroupIDNotFound:
			return fmt.Sprintf("%s %q does not exist", e.kind, e.name)
		case kerr.TopicAlreadyExists:
			return fmt.Sprintf("%s %q already exists", e.kind, e.name)
		}
	}
	s := fmt.Sprintf("%s %q: %s", e.kind, e.name, errorMessage(e.err))
	if e.msg != "" && !strings.Contains(s, e.msg) {
		s += " (" + e.msg + ")"
	}
	return s
}

func (e *subjectError) Unwrap() error { return e.err }

func topicError(topic string, err error) error {
	if err == nil {
		return nil
	}
	return &subjectError{kind: "topic", name: topic, err: err}
}

func groupError(group string, err error) error {
	if err == nil {
		return nil
	}
	return &subjectError{kind: "group", name: group, err: err}
}

// errorMessage is the one-line text of a command's error. A Kafka error
// code is spelled out with its description; whatever the error wraps it
// with (the broker's message, what was being done) is kept.
func errorMessage(err error) string {
	var ke *kerr.Error
	var se *subjectError
	var ae *kadm.AuthError
	switch {
	case errors.As(err, &se):
		return oneLine(se.Error())
	case errors.As(err, &ae) || isAuthError(err):
		if errors.As(err, &ke) {
			return oneLine(strings.Replace(err.Error(), ke.Error(), fmt.Sprintf("not authorized: %s (%s)", ke.Description, ke.Message), 1))
		}
		return "not authorized: " + oneLine(err.Error())
	case errors.As(err, &ke):
		return oneLine(strings.Replace(err.Error(), ke.Error(), fmt.Sprintf("%s: %s", ke.Message, ke.Description), 1))
	case strings.Contains(err.Error(), "broker is too old"):
		return "the broker does not support this request (" + oneLine(err.Error()) + ")"
	}
	return oneLine(err.Error())
}

func isAuthError(err error) bool {
	for _, ae := range []error{kerr.ClusterAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed, kerr.DelegationTokenAuthorizationFailed, kerr.SaslAuthenticationFailed} {
		if errors.Is(err, ae) {
			return true
		}
	}
	return false
}

// oneLine folds a multi-line message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// firstShardError unwraps kadm's *ShardErrors to its first error, which is
// what a one-line message can say.
func firstShardError(err error) error {
	var se *kadm.ShardErrors
	if errors.As(err, &se) && len(se.Errs) > 0 {
		return se.Errs[0].Err
	}
	return err
}
