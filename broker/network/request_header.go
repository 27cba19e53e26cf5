package network

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestHeader is a parsed request header (v1, or v2 when flexible).
type requestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      []byte // aliases the frame; nil when null
	Flexible      bool   // header v2: tagged fields followed the client id
}

var (
	errTruncatedHeader  = errors.New("truncated request header")
	errClientIDLength   = errors.New("invalid client id length")
	errUnknownAPIKey    = errors.New("unknown API key")
	errHeaderTaggedFlds = errors.New("malformed request header tagged fields")
	errUnsupportedVer   = errors.New("unsupported API version")
)

// parseRequestHeader parses the request header at the start of frame and
// returns it with the body that follows. It never reads past frame and
// allocates nothing: ClientID aliases frame. For an unknown API key it
// returns the v1 header, for logging, and errUnknownAPIKey.
func parseRequestHeader(frame []byte) (h requestHeader, body []byte, err error) {
	h, b, err := parseHeaderV1(frame)
	if err != nil {
		return h, nil, err
	}
	flexible, known := headerFlexible(h.APIKey, h.APIVersion)
	if !known {
		return h, nil, errUnknownAPIKey
	}
	if !versionKnown(h.APIKey, h.APIVersion) {
		if h.APIKey != apiVersionsKey {
			// The header's shape is unknown past this point, and
			// Kafka closes the connection too.
			return h, nil, errUnsupportedVer
		}
		// ApiVersions at a version we do not know: kapi answers in the
		// v0 format (KIP-511), which needs only the correlation id;
		// the body is not read.
		if rest, err := skipTaggedFields(b); err == nil {
			b = rest
		}
		h.Flexible = flexible
		return h, b, nil
	}
	if flexible {
		h.Flexible = true
		if b, err = skipTaggedFields(b); err != nil {
			return h, nil, err
		}
	}
	return h, b, nil
}

// parseHeaderV1 parses the v1 part of a request header (key, version,
// correlation id, client id), which every header starts with; a
// Moldau-private API key has only that.
func parseHeaderV1(frame []byte) (h requestHeader, body []byte, err error) {
	const fixed = 2 + 2 + 4 + 2 // key, version, correlation id, client id length
	if len(frame) < fixed {
		return h, nil, errTruncatedHeader
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	b := frame[fixed:]
	switch {
	case n == -1:
	case n < -1 || int(n) > len(b):
		return h, nil, errClientIDLength
	default:
		h.ClientID = b[:n:n]
		b = b[n:]
	}
	return h, b, nil
}

// skipTaggedFields skips a tagged-field section; every length is checked
// against what is left of b.
func skipTaggedFields(b []byte) ([]byte, error) {
	num, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errHeaderTaggedFlds
	}
	b = b[n:]
	if num > uint64(len(b)/2) { // a field takes at least 2 bytes
		return nil, errHeaderTaggedFlds
	}
	for range num {
		if _, n = binary.Uvarint(b); n <= 0 { // tag
			return nil, errHeaderTaggedFlds
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errHeaderTaggedFlds
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// flexibleFrom[key] is the first version of key whose request header is
// flexible (v2), math.MaxInt16 if none, -1 if kmsg does not know the key.
// It is an immutable table derived from kmsg, computed once.
var flexibleFrom = sync.OnceValue(func() []int16 {
	t := make([]int16, 256)
	for key := range t {
		t[key] = firstFlexibleVersion(int16(key))
	}
	return t
})

func firstFlexibleVersion(key int16) int16 {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return -1
	}
	for v := int16(0); v <= req.MaxVersion(); v++ {
		req.SetVersion(v)
		if req.IsFlexible() {
			return v
		}
	}
	return math.MaxInt16
}

const apiVersionsKey = 18

// versionKnown reports whether kmsg knows this version of the key (kapi
// then decides whether it is served). It allocates nothing.
func versionKnown(key, version int16) bool {
	if key < 0 || int(key) >= 256 {
		return false
	}
	return version >= 0 && version <= maxVersion()[key]
}

// maxVersion[key] is kmsg's newest version of key, -1 if unknown; an
// immutable table computed once.
var maxVersion = sync.OnceValue(func() []int16 {
	t := make([]int16, 256)
	for key := range t {
		t[key] = -1
		if req := kmsg.RequestForKey(int16(key)); req != nil {
			t[key] = req.MaxVersion()
		}
	}
	return t
})

// headerFlexible reports whether (key, version) uses request header v2,
// and whether the key is known at all.
func headerFlexible(key, version int16) (flexible, known bool) {
	var from int16
	if key >= 0 && int(key) < 256 {
		from = flexibleFrom()[key]
	} else {
		from = firstFlexibleVersion(key)
	}
	if from < 0 {
		return false, false
	}
	return version >= from, true
}

// apiName is Kafka's name of an API key, as in RequestMetrics.
func apiName(key int16) string { return kmsg.NameForKey(key) }
