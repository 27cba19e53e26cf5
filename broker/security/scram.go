package security

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/security/scram"
)

// SCRAM (RFC 5802, RFC 7677) as Kafka's ScramSaslServer: SCRAM-SHA-256
// and SCRAM-SHA-512, gs2 header "n" only (no channel binding),
// credentials (salt, stored key, server key, iterations) from the
// metadata image's UserScramCredentialRecords (package scram derives
// them).

// The message grammar of Kafka's ScramMessages.
var (
	// Go's regexp has no class intersection: the classes are spelled.
	scramClientFirstRE = regexp.MustCompile(`^n,(?:a=([^,]*))?,(?:m=[\x01-\x2B\x2D-\x7F]+,)?n=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+),r=([\x21-\x2B\x2D-\x7E]+)((?:,[A-Za-z]+=[\x01-\x2B\x2D-\x7F]+)*)$`)
	scramClientFinalRE = regexp.MustCompile(`^c=([a-zA-Z0-9/+=]*),r=([\x21-\x2B\x2D-\x7E]+)((?:,[A-Za-z]+=[\x01-\x2B\x2D-\x7F]+)*),p=([a-zA-Z0-9/+=]+)$`)
)

// scramServer is one SCRAM exchange (ScramSaslServer).
type scramServer struct {
	mech   scram.Mechanism
	lookup func(mechanism, user string) (scram.Credential, bool)
	// tokenLookup finds a delegation token's credential and owner by
	// token id (nil: token authentication is refused).
	tokenLookup func(mechanism, tokenID string) (cred scram.Credential, owner string, ok bool)
	// tokenOwner is the owner principal ("User:alice") of the token the
	// client authenticated with; empty: not a token.
	tokenOwner string

	state            int // 0: client-first expected, 1: client-final, 2: done, 3: failed
	user             string
	cred             scram.Credential
	clientFirstBare  string
	serverFirst      string
	nonce            string
	extensionsTokens bool
}

// scramFail is an authentication failure with the generic message Kafka
// sends for a SaslException.
func scramFail(mech string) error {
	return apierr.Errorf(kerr.SaslAuthenticationFailed, "Authentication failed during authentication due to invalid credentials with SASL mechanism %s", mech)
}

func (s *scramServer) evaluate(token []byte) ([]byte, error) {
	switch s.state {
	case 0:
		out, err := s.clientFirst(string(token))
		if err != nil {
			s.state = 3
			return nil, err
		}
		s.state = 1
		return out, nil
	case 1:
		out, err := s.clientFinal(string(token))
		if err != nil {
			s.state = 3
			return nil, err
		}
		s.state = 2
		return out, nil
	}
	return nil, apierr.Errorf(kerr.IllegalSaslState, "Unexpected challenge in Sasl server state %d", s.state)
}

func (s *scramServer) clientFirst(msg string) ([]byte, error) {
	m := scramClientFirstRE.FindStringSubmatch(msg)
	if m == nil {
		return nil, scramFail(s.mech.Name)
	}
	authzid, saslName, cnonce, ext := m[1], m[2], m[3], m[4]
	user := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(saslName)
	tokenAuth := false
	for _, kv := range strings.Split(strings.TrimPrefix(ext, ","), ",") {
		if k, v, _ := strings.Cut(kv, "="); k == "tokenauth" && strings.EqualFold(v, "true") {
			tokenAuth = true
		}
	}
	var cred scram.Credential
	var ok bool
	if tokenAuth {
		// Kafka's ScramSaslServer: the username is the token id, the
		// credential the token's, the principal its owner.
		var owner string
		if s.tokenLookup != nil {
			cred, owner, ok = s.tokenLookup(s.mech.Name, user)
		}
		if !ok {
			return nil, apierr.Errorf(kerr.SaslAuthenticationFailed, "Token Authentication failed: Invalid tokenId : %s", user)
		}
		s.tokenOwner = owner
	} else if cred, ok = s.lookup(s.mech.Name, user); !ok {
		return nil, scramFail(s.mech.Name)
	}
	if authzid != "" && authzid != user {
		return nil, apierr.New(kerr.SaslAuthenticationFailed, "Authentication failed: Client requested an authorization id that is different from username")
	}
	if cred.Iterations < s.mech.MinIterations {
		return nil, scramFail(s.mech.Name)
	}
	s.user, s.cred = user, cred
	s.clientFirstBare = msg[strings.Index(msg, "n="):]
	s.nonce = cnonce + secureRandomString()
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	return []byte(s.serverFirst), nil
}

func (s *scramServer) clientFinal(msg string) ([]byte, error) {
	// Kafka checks only that the nonce ends with the server-first one:
	// librdkafka before 1.9 repeats the client nonce in front of it.
	m := scramClientFinalRE.FindStringSubmatch(msg)
	if m == nil || !strings.HasSuffix(m[2], s.nonce) {
		return nil, scramFail(s.mech.Name)
	}
	proof, err := base64.StdEncoding.DecodeString(m[4])
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return nil, scramFail(s.mech.Name)
	}
	withoutProof := msg[:strings.LastIndex(msg, ",p=")]
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	clientSignature := s.mech.HMAC(s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSignature[i]
	}
	if subtle.ConstantTimeCompare(s.mech.H(clientKey), s.cred.StoredKey) != 1 {
		return nil, scramFail(s.mech.Name)
	}
	serverSignature := s.mech.HMAC(s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), nil
}

// secureRandomString is ScramFormatter's: 130 random bits in base 36.
func secureRandomString() string {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 130))
	if err != nil {
		panic(fmt.Sprintf("scram: random: %v", err))
	}
	return n.Text(36)
}

// TokenCredential derives a delegation token's SCRAM credential for a
// mechanism, as Kafka's DelegationTokenManager: the password is the
// base64 of the token's HMAC, salted with a random salt, 4096 iterations.
func TokenCredential(m scram.Mechanism, hmac []byte) scram.Credential {
	return m.NewCredential(base64.StdEncoding.EncodeToString(hmac), m.MinIterations)
}
