package kapi

import (
	"net"
	"os"
	"time"
)

// Request is one framed request handed from the socket server to the
// handler pool. The socket server has parsed the request header (it needs
// the API key and version to know whether the header is flexible); the body
// is decoded here, in kapi, by the handler goroutine.
type Request struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      string // empty for a null client id

	// Body is the request body after the header, aliasing the frame
	// buffer. It is valid until Respond is called.
	Body []byte

	// Size is the frame size in bytes (without the 4-byte prefix).
	Size int

	Listener   string   // listener name, e.g. "PLAINTEXT"
	ClientAddr net.Addr // remote peer
	ConnID     string   // Kafka-style connection id: local-remote-index
	// Principal is the connection's authenticated principal, Kafka's
	// "User:<name>": User:ANONYMOUS on a PLAINTEXT listener or without a
	// client certificate, else the mapped subject of the certificate
	// (ssl.principal.mapping.rules). For the authorizer to come.
	Principal string
	// SecurityProtocol is the listener's: PLAINTEXT, SSL, SASL_PLAINTEXT
	// or SASL_SSL.
	SecurityProtocol string
	// TokenAuthenticated: the connection logged in with a delegation
	// token (such a connection may not manage tokens, as in Kafka).
	TokenAuthenticated bool
	Received           time.Time
}

// Response is what the handler hands back to the socket server for one
// request. Exactly one Response is produced for every Request, even when
// nothing is sent (acks=0), because the connection stays muted until then.
//
// The bytes on the wire are Buf with each Region's file bytes spliced in at
// Region.At, in order. Buf starts with the 4-byte size prefix, which
// already counts the regions' lengths. Regions let fetch responses go from
// the page cache to the socket with sendfile.
type Response struct {
	Buf     []byte
	Regions []FileRegion

	// NoResponse: send nothing (acks=0 produce); the connection unmutes.
	NoResponse bool
	// Close: close the connection after sending Buf (if any), as Kafka
	// does for a request it cannot parse.
	Close bool
	// CloseReason is logged by the socket server when Close is set.
	CloseReason string
	// Throttle mutes the connection for this long once the response is
	// sent (at once with NoResponse): no further request is read from it
	// meanwhile (KIP-219; Kafka's ThrottledChannel). The response itself
	// carries the time in throttle_time_ms, so the client waits too.
	Throttle time.Duration

	// Release, if set, is called once the response has been written (or
	// dropped); it returns pooled buffers and releases file references.
	Release func()
}

// FileRegion is a byte range of a file that is written to the socket at
// offset At of Response.Buf (before Buf[At:]); or, with Bytes set (File
// nil, Len their length), bytes in memory (records read from remote
// storage), written as they are rather than copied into Buf.
type FileRegion struct {
	At    int
	File  *os.File
	Off   int64
	Len   int64
	Bytes []byte
}

// Size is the total number of bytes the response puts on the wire.
func (r *Response) Size() int64 {
	n := int64(len(r.Buf))
	for _, reg := range r.Regions {
		n += reg.Len
	}
	return n
}
