package security

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
)

// plainServer is SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer with
// PlainServerCallbackHandler: one message authzid NUL username NUL
// password, checked against the user_<name> options of the listener's
// PlainLoginModule.
type plainServer struct {
	users map[string]string
	user  string
	done  bool
}

// plainDummy is compared against when the user is unknown, so that an
// unknown user costs the same time as a wrong password.
var plainDummy = sha256.Sum256([]byte("moldau: no such user"))

func (p *plainServer) evaluate(token []byte) ([]byte, error) {
	if p.done {
		return nil, apierr.New(kerr.IllegalSaslState, "Unexpected response in SASL/PLAIN: the exchange is complete")
	}
	parts := strings.Split(string(token), "\x00")
	if len(parts) != 3 {
		return nil, apierr.Errorf(kerr.SaslAuthenticationFailed, "Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))
	}
	authzid, user, password := parts[0], parts[1], parts[2]
	if user == "" {
		return nil, apierr.New(kerr.SaslAuthenticationFailed, "Authentication failed: username not specified")
	}
	if password == "" {
		return nil, apierr.New(kerr.SaslAuthenticationFailed, "Authentication failed: password not specified")
	}
	// Compare digests in constant time: neither the password's length
	// nor whether the user exists shows in the time taken.
	got := sha256.Sum256([]byte(password))
	want := plainDummy
	expected, known := p.users[user]
	if known {
		want = sha256.Sum256([]byte(expected))
	}
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || !known {
		return nil, apierr.New(kerr.SaslAuthenticationFailed, "Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != user {
		return nil, apierr.New(kerr.SaslAuthenticationFailed, "Authentication failed: Client requested an authorization id that is different from username")
	}
	p.user, p.done = user, true
	return nil, nil
}

// plainUsers are the user_<name> options of a PlainLoginModule entry.
func plainUsers(e JaasEntry) map[string]string {
	users := map[string]string{}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			users[name] = v
		}
	}
	return users
}
