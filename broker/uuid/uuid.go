// Package uuid is Kafka's Uuid (KIP-516): 16 bytes, written as URL-safe
// base64 without padding, as Kafka's Uuid.toString does. Topic IDs, the
// cluster ID, directory IDs and member IDs of KIP-848 groups use it.
package uuid

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// UUID is a Kafka Uuid. The zero value is Kafka's ZERO_UUID.
type UUID [16]byte

// Kafka's reserved UUIDs (Uuid.java).
var (
	Zero UUID // ZERO_UUID
	// MetadataTopicID is Uuid.METADATA_TOPIC_ID, the ID of
	// __cluster_metadata.
	MetadataTopicID = UUID{15: 1}
)

// String formats the UUID as Kafka does.
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// IsZero reports whether u is ZERO_UUID.
func (u UUID) IsZero() bool { return u == Zero }

// Parse parses Kafka's string form.
func Parse(s string) (UUID, error) {
	var u UUID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("invalid UUID %q: want 22 characters of URL-safe base64", s)
	}
	copy(u[:], b)
	return u, nil
}

// Random returns a version-4 UUID as Uuid.randomUuid does: never a reserved
// one, and never one whose string starts with '-' (it would read as a
// command-line flag).
func Random() UUID {
	for {
		var u UUID
		if _, err := rand.Read(u[:]); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if u == Zero || u == MetadataTopicID || u.String()[0] == '-' {
			continue
		}
		return u
	}
}

// MarshalText implements encoding.TextMarshaler.
func (u UUID) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (u *UUID) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	*u = v
	return err
}
