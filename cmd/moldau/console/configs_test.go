package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBrokerConfigsFrom(t *testing.T) {
	str := func(s string) *string { return &s }
	rcs := kadm.ResourceConfigs{
		{Name: "2", Err: kerr.UnknownServerError},
		{Name: "1", Configs: []kadm.Config{
			{Key: "num.io.threads", Value: str("8"), Source: kmsg.ConfigSourceDefaultConfig},
			{Key: "log.dirs", Value: str("/data"), Source: kmsg.ConfigSourceStaticBrokerConfig},
			{Key: "auto.create.topics.enable", Value: str("true"), Source: kmsg.ConfigSourceDefaultConfig},
			{Key: "ssl.key.password", Sensitive: true, Source: kmsg.ConfigSourceStaticBrokerConfig},
			{Key: "log.retention.ms", Value: str("1000"), Source: kmsg.ConfigSourceDynamicBrokerConfig},
		}},
	}
	got, err := brokerConfigsFrom(1, rcs)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range got.Configs {
		v := "null"
		if c.Value != nil {
			v = *c.Value
		}
		order = append(order, fmt.Sprintf("%s=%s %s %v", c.Name, v, c.Source, c.Default))
	}
	want := "[log.dirs=/data STATIC_BROKER_CONFIG false log.retention.ms=1000 DYNAMIC_BROKER_CONFIG false " +
		"ssl.key.password=null STATIC_BROKER_CONFIG false auto.create.topics.enable=true DEFAULT_CONFIG true num.io.threads=8 DEFAULT_CONFIG true]"
	if fmt.Sprint(order) != want {
		t.Fatalf("got  %v\nwant %s", order, want)
	}
	if _, err := brokerConfigsFrom(2, rcs); !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("broker 2: %v", err)
	}
	if _, err := brokerConfigsFrom(3, rcs); err == nil {
		t.Fatal("broker 3 is not in the answer, yet no error")
	}
}

// fakeConfigs is a snapshot source that answers BrokerConfigs.
type fakeConfigs struct {
	*Poller
	answer func(id int32) (*BrokerConfigs, error)
}

func (f fakeConfigs) BrokerConfigs(_ context.Context, id int32) (*BrokerConfigs, error) {
	return f.answer(id)
}

func TestBrokerConfigsEndpoint(t *testing.T) {
	value := "/data"
	src := fakeConfigs{Poller: testPoller(), answer: func(id int32) (*BrokerConfigs, error) {
		switch id {
		case 1:
			return &BrokerConfigs{Broker: 1, Configs: []BrokerConfig{{Name: "log.dirs", Value: &value, Source: "STATIC_BROKER_CONFIG"}}}, nil
		case 2:
			return nil, fmt.Errorf("asking: %w", context.DeadlineExceeded)
		}
		return nil, kerr.UnknownServerError
	}}
	srv, _ := serveSource(t, src, Config{}, nil)

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get("/api/broker/1/configs")
	var got BrokerConfigs
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil ||
		len(got.Configs) != 1 || got.Configs[0].Name != "log.dirs" || *got.Configs[0].Value != "/data" {
		t.Fatalf("broker 1: %d %s (%v)", code, body, err)
	}
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/api/broker/2/configs", http.StatusGatewayTimeout},
		{"/api/broker/3/configs", http.StatusBadGateway},
		{"/api/broker/x/configs", http.StatusBadRequest},
		{"/api/broker/-1/configs", http.StatusBadRequest},
	} {
		if code, body := get(tc.path); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.path, code, body, tc.code)
		}
	}

	// A replay has no cluster to ask.
	run, _ := recordRun(t, 2)
	r, err := NewReplay(run)
	if err != nil {
		t.Fatal(err)
	}
	rsrv, _ := serveSource(t, r, Config{}, nil)
	srv = rsrv
	if code, body := get("/api/broker/1/configs"); code != http.StatusNotFound {
		t.Fatalf("replay: %d %s, want 404", code, body)
	}
}
