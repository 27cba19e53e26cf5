package network

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/kapi"
)

// markerEcho answers a WriteTxnMarkersRequest body with every partition's
// error code set to its partition number, framed as kapi frames responses.
func markerEcho(version int16, corr int32, body []byte) ([]byte, error) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = version
	if err := req.ReadFrom(body); err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: p, ErrorCode: int16(p)})
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 4), uint32(corr))
	if resp.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf, nil
}

type echoHandler struct{ listener string }

func (h echoHandler) Handle(_ context.Context, r *kapi.Request, respond func(*kapi.Response)) {
	if r.APIKey != 27 || r.Listener != h.listener {
		respond(&kapi.Response{Close: true, CloseReason: "unexpected request"})
		return
	}
	buf, err := markerEcho(r.APIVersion, r.CorrelationID, r.Body)
	if err != nil {
		respond(&kapi.Response{Close: true, CloseReason: err.Error()})
		return
	}
	go respond(&kapi.Response{Buf: buf}) // later, from another goroutine
}

func markersRequest() *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 7, 1, true, 3
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0, 5}}}
	req.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
	return req
}

func checkEcho(t *testing.T, resp *kmsg.WriteTxnMarkersResponse, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.Markers[0].Topics[0].Partitions
	if resp.Markers[0].ProducerID != 7 || len(ps) != 2 || ps[1].ErrorCode != 5 {
		t.Fatalf("response %+v", resp)
	}
}

// serveOne answers WriteTxnMarkers requests on l, parsing the request
// header as a broker does.
func serveOne(t *testing.T, l net.Listener) {
	c, err := l.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	for {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		r := kbin.Reader{Src: frame}
		key, version, corr := r.Int16(), r.Int16(), r.Int32()
		r.NullableString() // client id
		if key != 27 {
			t.Errorf("api key %d", key)
			return
		}
		if version >= 1 {
			r.Uvarint() // no header tags
		}
		buf, err := markerEcho(version, corr, r.Src)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

func TestInterBrokerChannel(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go serveOne(t, l)
	addr := l.Addr().(*net.TCPAddr)
	im := &metadata.Image{Brokers: map[int32]*metadata.Broker{
		1: {ID: 1},
		2: {ID: 2, Endpoints: []metadata.BrokerEndpoint{{Name: "INTERNAL", Host: "127.0.0.1", Port: uint16(addr.Port)}}},
		3: {ID: 3, Fenced: true, Endpoints: []metadata.BrokerEndpoint{{Name: "INTERNAL", Host: "127.0.0.1", Port: 1}}},
		4: {ID: 4, Endpoints: []metadata.BrokerEndpoint{{Name: "OTHER", Host: "127.0.0.1", Port: 1}}},
	}}
	var handler RequestHandler
	c := NewInterBrokerChannel(1, "INTERNAL", "broker-1-test", 1, slog.New(slog.DiscardHandler), func() *metadata.Image { return im },
		func() RequestHandler { return handler })
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// This broker, before its handler exists: an error to retry.
	if _, err := c.SendWriteTxnMarkers(ctx, 1, markersRequest()); !errors.Is(err, errConnClosed) {
		t.Fatalf("local before the handler: %v", err)
	}
	// In-process, encoded and decoded as on the wire, on the
	// inter-broker listener.
	handler = echoHandler{listener: "INTERNAL"}
	resp, err := c.SendWriteTxnMarkers(ctx, 1, markersRequest())
	checkEcho(t, resp, err)
	// Over TCP, twice on one connection.
	for range 2 {
		resp, err = c.SendWriteTxnMarkers(ctx, 2, markersRequest())
		checkEcho(t, resp, err)
	}
	// Fenced, unknown, or without the listener: errors to retry.
	for _, id := range []int32{3, 4, 9} {
		if _, err := c.SendWriteTxnMarkers(ctx, id, markersRequest()); !errors.Is(err, errConnClosed) {
			t.Fatalf("broker %d: %v", id, err)
		}
	}
}

// A request the destination holds back (the coordinator holding an
// AddPartitionsToTxn until the previous markers are written) does not hold
// up the next request to the same broker: it goes on another connection.
func TestInterBrokerChannelHeldRequestDoesNotBlockTheNext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	holding, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					var size [4]byte
					if _, err := io.ReadFull(c, size[:]); err != nil {
						return
					}
					frame := make([]byte, binary.BigEndian.Uint32(size[:]))
					if _, err := io.ReadFull(c, frame); err != nil {
						return
					}
					r := kbin.Reader{Src: frame}
					_, version, corr := r.Int16(), r.Int16(), r.Int32()
					r.NullableString()
					r.Uvarint()
					held := false
					first.Do(func() { held = true })
					if held {
						close(holding)
						<-release
					}
					buf, err := markerEcho(version, corr, r.Src)
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	addr := l.Addr().(*net.TCPAddr)
	im := &metadata.Image{Brokers: map[int32]*metadata.Broker{
		2: {ID: 2, Endpoints: []metadata.BrokerEndpoint{{Name: "INTERNAL", Host: "127.0.0.1", Port: uint16(addr.Port)}}},
	}}
	c := NewInterBrokerChannel(1, "INTERNAL", "broker-1-test", 2, slog.New(slog.DiscardHandler), func() *metadata.Image { return im },
		func() RequestHandler { return nil })
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	heldDone := make(chan error, 1)
	go func() {
		resp, err := c.SendWriteTxnMarkers(ctx, 2, markersRequest())
		if err == nil && resp.Markers[0].ProducerID != 7 {
			err = errors.New("unexpected response")
		}
		heldDone <- err
	}()
	// Once the first request is held, the second is answered.
	<-holding
	resp, err := c.SendWriteTxnMarkers(ctx, 2, markersRequest())
	checkEcho(t, resp, err)
	close(release)
	if err := <-heldDone; err != nil {
		t.Fatalf("held request: %v", err)
	}
}
