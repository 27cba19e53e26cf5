package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/memory"
)

// queued.max.request.bytes: derived from the memory budget when unset
// (and reported so by DescribeConfigs), -1 unbounded, and otherwise at
// least socket.request.max.bytes as Kafka requires.
func TestQueuedMaxRequestBytes(t *testing.T) {
	c := Default()
	budget, _ := memory.Budget()
	if want := memory.DefaultQueuedMaxRequestBytes(budget); c.QueuedMaxRequestBytes != want || c.MemoryBudget != budget {
		t.Fatalf("derived %d from %d, want %d", c.QueuedMaxRequestBytes, c.MemoryBudget, want)
	}
	be, err := c.DescribeBroker("1", []string{"queued.max.request.bytes"})
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(be, "queued.max.request.bytes"); e.Value == nil || *e.Value != formatValue(c.QueuedMaxRequestBytes) || e.Source != SourceDefault || !e.ReadOnly {
		t.Fatalf("described as %+v", e)
	}
	for _, v := range []string{"-1", "0"} {
		c, _, err := Load("", []string{"queued.max.request.bytes=" + v})
		if err != nil || c.QueuedMaxRequestBytes != -1 {
			t.Fatalf("%s: %v %v", v, c, err)
		}
	}
	c, _, err = Load("", []string{"queued.max.request.bytes=209715200"})
	if err != nil || c.QueuedMaxRequestBytes != 200<<20 || c.MemoryBudget != 0 {
		t.Fatalf("set: %+v %v", c, err)
	}
	_, _, err = Load("", []string{"queued.max.request.bytes=1000"})
	if err == nil || !strings.Contains(err.Error(), "at least socket.request.max.bytes (104857600)") {
		t.Fatalf("a pool below socket.request.max.bytes: %v", err)
	}
}

func TestConnectionQuotaConfigs(t *testing.T) {
	c, warnings, err := Load("", []string{
		"listeners=PLAINTEXT://:9092,INTERNAL://:9093",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
		"max.connections=100", "max.connections.per.ip=0",
		"max.connections.per.ip.overrides=127.0.0.1:5, [::1]:6,broker-1.example.com:7",
		"listener.name.internal.max.connections=20",
		"listener.name.plaintext.max.connection.creation.rate=50",
	})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("%v %v", err, warnings)
	}
	q, err := c.ConnectionQuotas()
	if err != nil {
		t.Fatal(err)
	}
	if q.MaxConnections != 100 || q.MaxConnectionsPerIP != 0 || q.MaxConnectionCreationRate != math.MaxInt32 ||
		q.PerIPOverrides["127.0.0.1"] != 5 || q.PerIPOverrides["::1"] != 6 || q.PerIPOverrides["broker-1.example.com"] != 7 {
		t.Fatalf("quotas %+v", q)
	}
	if l := q.Listeners["INTERNAL"]; l.MaxConnections != 20 || l.MaxConnectionCreationRate != math.MaxInt32 {
		t.Fatalf("INTERNAL %+v", l)
	}
	if l := q.Listeners["PLAINTEXT"]; l.MaxConnections != math.MaxInt32 || l.MaxConnectionCreationRate != 50 {
		t.Fatalf("PLAINTEXT %+v", l)
	}

	// Kafka's rules, at start-up and at run time.
	for _, bad := range [][]string{
		{"max.connections.per.ip=0"},
		{"max.connections.per.ip.overrides=127.0.0.1"},
		{"max.connections.per.ip.overrides=bad host:3"},
		{"max.connections.per.ip.overrides=h:-1"},
		{"listener.name.plaintext.max.connections=0"},
	} {
		if _, _, err := Load("", bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	c = Default()
	names := c.BrokerListenerNames()
	r := ReconfigurableFunc{
		Keys: ConnectionQuotaKeys(names),
		Validate: func(v map[string]any) error {
			_, err := ConnectionQuotasFrom(v, names)
			return err
		},
		Apply: func(_, _ map[string]any) {},
	}
	c.AddReconfigurable(r)
	if err := c.ValidateDynamic("", map[string]string{"max.connections.per.ip": "0"}); !errors.Is(err, kerr.InvalidRequest) ||
		!strings.Contains(err.Error(), "max.connections.per.ip can be set to zero only if") {
		t.Fatalf("per-ip 0 without overrides: %v", err)
	}
	if err := c.ValidateDynamic("", map[string]string{"listener.name.plaintext.max.connections": "0"}); err == nil {
		t.Fatal("a listener limit of 0 accepted")
	}
	if err := c.ValidateDynamic("", map[string]string{"max.connections": "7", "listener.name.plaintext.max.connection.creation.rate": "3"}); err != nil {
		t.Fatal(err)
	}
	c.SetDynamic("", map[string]string{"max.connections": "7", "listener.name.plaintext.max.connection.creation.rate": "3"})
	q, err = c.ConnectionQuotas()
	if err != nil || q.MaxConnections != 7 || q.Listeners["PLAINTEXT"].MaxConnectionCreationRate != 3 {
		t.Fatalf("after SetDynamic: %+v %v", q, err)
	}
}

func TestRequestReceiveTimeout(t *testing.T) {
	if d := Default().RequestReceiveTimeout(); d != 30*time.Second {
		t.Fatalf("default %v", d)
	}
	c, _, err := Load("", []string{RequestReceiveTimeoutKey + "=-1"})
	if err != nil || c.RequestReceiveTimeout() != 0 {
		t.Fatalf("-1: %v %v", c, err)
	}
	if _, _, err := Load("", []string{RequestReceiveTimeoutKey + "=0"}); err == nil {
		t.Fatal("0 accepted")
	}
	c = Default()
	c.SetDynamic("1", map[string]string{RequestReceiveTimeoutKey: "1500"})
	if d := c.RequestReceiveTimeout(); d != 1500*time.Millisecond {
		t.Fatalf("dynamic: %v", d)
	}
}
