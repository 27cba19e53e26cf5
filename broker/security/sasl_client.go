package security

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	fscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// The node's own login to a SASL listener of another node (Kafka's
// SaslClientAuthenticator on the inter-broker and controller clients):
// SaslHandshake v1 and SaslAuthenticate v1 right after the dial (and the
// TLS handshake on SASL_SSL), with the username and password of the
// listener's JAAS configuration for the mechanism
// (sasl.mechanism.inter.broker.protocol, sasl.mechanism.controller.protocol).
// The client side of PLAIN and SCRAM is franz-go's.

// SaslClient is how this node logs in to a listener.
type SaslClient struct {
	Listener  string
	Mechanism string
	Username  string
	Password  string
}

// NewSaslClient checks the mechanism and reads the node's credentials from
// the listener's JAAS entry for it (username and password options).
func NewSaslClient(listener, mechanism string, jaas JaasEntry, hasJaas bool, key string) (*SaslClient, error) {
	switch mechanism {
	case MechanismPlain, "SCRAM-SHA-256", "SCRAM-SHA-512":
	case MechanismGSSAPI:
		return nil, fmt.Errorf("%s is GSSAPI (Kafka's default), which Moldau does not support (no Kerberos): set it to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", key)
	default:
		return nil, fmt.Errorf("%s: Moldau's nodes log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, not %q", key, mechanism)
	}
	c := &SaslClient{Listener: listener, Mechanism: mechanism, Username: jaas.Options["username"], Password: jaas.Options["password"]}
	if !hasJaas || c.Username == "" || c.Password == "" {
		return nil, fmt.Errorf("%s is %s: listener %s's JAAS configuration for it must have username and password (the node's own login)", key, mechanism, listener)
	}
	return c, nil
}

func (c *SaslClient) mechanism() sasl.Mechanism {
	switch c.Mechanism {
	case MechanismPlain:
		return plain.Auth{User: c.Username, Pass: c.Password}.AsMechanism()
	case "SCRAM-SHA-512":
		return fscram.Auth{User: c.Username, Pass: c.Password}.AsSha512Mechanism()
	}
	return fscram.Auth{User: c.Username, Pass: c.Password}.AsSha256Mechanism()
}

// Dialer wraps dial (which may do a TLS handshake) with the login.
func (c *SaslClient) Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := c.login(ctx, nc, addr); err != nil {
			nc.Close()
			return nil, fmt.Errorf("SASL %s login as %s to %s (listener %s) failed: %w", c.Mechanism, c.Username, addr, c.Listener, err)
		}
		return nc, nil
	}
}

func (c *SaslClient) login(ctx context.Context, nc net.Conn, addr string) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	_ = nc.SetDeadline(deadline)
	defer nc.SetDeadline(time.Time{})
	ex := &saslExchange{nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("moldau-node"))}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, c.Mechanism
	hresp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if err := ex.roundTrip(hs, hresp); err != nil {
		return err
	}
	if err := kerr.ErrorForCode(hresp.ErrorCode); err != nil {
		return fmt.Errorf("%w (the listener enables %v)", err, hresp.SupportedMechanisms)
	}
	session, msg, err := c.mechanism().Authenticate(ctx, addr)
	if err != nil {
		return err
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, msg
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if err := ex.roundTrip(req, resp); err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
			}
			return err
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		msg = next
	}
}

// saslExchange sends requests with non-flexible headers and reads their
// responses (at most maxSaslResponse bytes).
type saslExchange struct {
	nc   net.Conn
	f    *kmsg.RequestFormatter
	corr int32
}

const maxSaslResponse = 1 << 20

func (e *saslExchange) roundTrip(req kmsg.Request, resp kmsg.Response) error {
	e.corr++
	if _, err := e.nc.Write(e.f.AppendRequest(nil, req, e.corr)); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(e.nc, hdr[:]); err != nil {
		return fmt.Errorf("reading the %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	size := int32(binary.BigEndian.Uint32(hdr[:4]))
	if size < 4 || size > maxSaslResponse {
		return fmt.Errorf("%s response of invalid size %d", kmsg.NameForKey(req.Key()), size)
	}
	if corr := int32(binary.BigEndian.Uint32(hdr[4:])); corr != e.corr {
		return fmt.Errorf("%s response has correlation id %d, want %d", kmsg.NameForKey(req.Key()), corr, e.corr)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(e.nc, body); err != nil {
		return err
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}
