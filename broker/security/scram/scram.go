// Package scram is Kafka's ScramFormatter and ScramMechanism (RFC 5802,
// RFC 7677): the SCRAM-SHA-256 and SCRAM-SHA-512 mechanisms, their wire
// and record values, and the derivation of a credential (salt, stored key,
// server key, iterations) from a password or a salted password. A leaf,
// so the controller (AlterUserScramCredentials), the SASL server
// (broker/security) and the command line share it.
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Mechanism is one of Kafka's ScramMechanism values.
type Mechanism struct {
	Name          string
	Type          int8 // the wire and record value: 1 SHA-256, 2 SHA-512
	hash          func() hash.Hash
	MinIterations int32
}

// Kafka's SCRAM mechanisms (Mechanism).
var (
	SHA256 = Mechanism{Name: "SCRAM-SHA-256", Type: 1, hash: sha256.New, MinIterations: 4096}
	SHA512 = Mechanism{Name: "SCRAM-SHA-512", Type: 2, hash: sha512.New, MinIterations: 4096}
)

// Iteration bounds of AlterUserScramCredentials (ScramControlManager).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// MechanismByName returns the mechanism of a name.
func MechanismByName(name string) (Mechanism, bool) {
	switch name {
	case SHA256.Name:
		return SHA256, true
	case SHA512.Name:
		return SHA512, true
	}
	return Mechanism{}, false
}

// MechanismByType returns the mechanism of a wire value.
func MechanismByType(t int8) (Mechanism, bool) {
	switch t {
	case SHA256.Type:
		return SHA256, true
	case SHA512.Type:
		return SHA512, true
	}
	return Mechanism{}, false
}

// Credential is what the server keeps of a SCRAM password.
type Credential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

func (m Mechanism) HMAC(key, msg []byte) []byte {
	h := hmac.New(m.hash, key)
	h.Write(msg)
	return h.Sum(nil)
}

func (m Mechanism) H(b []byte) []byte {
	h := m.hash()
	h.Write(b)
	return h.Sum(nil)
}

// SaltedPassword is Hi(password, salt, iterations) (PBKDF2 with HMAC).
func (m Mechanism) SaltedPassword(password string, salt []byte, iterations int) []byte {
	k, err := pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
	if err != nil {
		panic("scram: pbkdf2: " + err.Error()) // only for FIPS-mode key lengths
	}
	return k
}

// CredentialFromSalted derives the stored and server keys from a salted
// password, as the controller does for AlterUserCredentials.
func (m Mechanism) CredentialFromSalted(salted, salt []byte, iterations int32) Credential {
	return Credential{
		Salt:       salt,
		StoredKey:  m.H(m.HMAC(salted, []byte("Client Key"))),
		ServerKey:  m.HMAC(salted, []byte("Server Key")),
		Iterations: iterations,
	}
}

// NewCredential makes a credential from a password with a random salt.
func (m Mechanism) NewCredential(password string, iterations int32) Credential {
	salt := make([]byte, 32)
	_, _ = rand.Read(salt)
	return m.CredentialFromSalted(m.SaltedPassword(password, salt, int(iterations)), salt, iterations)
}

// Upsertion is one credential to create: a user, a mechanism, the salt,
// the salted password and the iterations, as AlterUserScramCredentials
// carries it.
type Upsertion struct {
	Name           string
	Mechanism      Mechanism
	Salt           []byte
	SaltedPassword []byte
	Iterations     int32
}

// ParseAddScram parses a credential in the form of Kafka's
// kafka-storage format --add-scram (ScramParser):
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,salt="<base64>",saltedpassword="<base64>"]
//
// Values may be double-quoted; iterations default to 4096; without a salt
// a random one is made; a password and a salted password exclude each
// other.
func ParseAddScram(s string) (Upsertion, error) {
	var u Upsertion
	name, rest, ok := strings.Cut(strings.TrimSpace(s), "=")
	m, known := MechanismByName(strings.TrimSpace(name))
	if !ok || !known {
		return u, fmt.Errorf("expected SCRAM-SHA-256=[...] or SCRAM-SHA-512=[...]")
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return u, fmt.Errorf("expected the credential's fields in [...]")
	}
	u.Mechanism, u.Iterations = m, MinIterations
	var password *string
	for _, kv := range strings.Split(rest[1:len(rest)-1], ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok {
			return u, fmt.Errorf("field %q is not key=value", kv)
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		var err error
		switch k {
		case "name":
			u.Name = v
		case "password":
			password = &v
		case "iterations":
			var n int
			n, err = strconv.Atoi(v)
			u.Iterations = int32(n)
		case "salt":
			u.Salt, err = base64.StdEncoding.DecodeString(v)
		case "saltedpassword":
			u.SaltedPassword, err = base64.StdEncoding.DecodeString(v)
		default:
			return u, fmt.Errorf("unknown field %q (name, password, iterations, salt, saltedpassword)", k)
		}
		if err != nil {
			return u, fmt.Errorf("field %s: %w", k, err)
		}
	}
	switch {
	case u.Name == "":
		return u, fmt.Errorf("name is missing")
	case password != nil && u.SaltedPassword != nil:
		return u, fmt.Errorf("password and saltedpassword exclude each other")
	case password == nil && u.SaltedPassword == nil:
		return u, fmt.Errorf("password (or saltedpassword) is missing")
	case u.SaltedPassword != nil && u.Salt == nil:
		return u, fmt.Errorf("saltedpassword needs its salt")
	}
	if u.Iterations < MinIterations || u.Iterations > MaxIterations {
		return u, fmt.Errorf("iterations must be between %d and %d", MinIterations, MaxIterations)
	}
	if password != nil {
		if u.Salt == nil {
			u.Salt = make([]byte, 32)
			_, _ = rand.Read(u.Salt)
		}
		u.SaltedPassword = m.SaltedPassword(*password, u.Salt, int(u.Iterations))
	}
	return u, nil
}
