package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scrape fetches /metrics and returns every sample as "name{labels}" ->
// value.
func scrape(t testing.TB, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	out := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

func metric(m map[string]float64, name string) (float64, bool) {
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			return v, true
		}
	}
	return 0, false
}

// A scrape under load shows both idle gauges inside 0..1, the handler
// gauge falls when the handlers are busy, and the request and topic
// counters move.
func TestMetricsUnderLoad(t *testing.T) {
	b := startBroker(t, "", "num.io.threads=1")
	addr := b.MetricsAddr().String()
	ctx := ctxTimeout(t, 90*time.Second)
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 4, 1, nil, "load"); err != nil {
		t.Fatal(err)
	}

	idle := func(m map[string]float64) (float64, float64) {
		n, ok1 := metric(m, "kafka_network_socketserver_networkprocessoravgidlepercent")
		h, ok2 := metric(m, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent")
		if !ok1 || !ok2 {
			t.Fatalf("idle gauges missing from /metrics")
		}
		for _, v := range []float64{n, h} {
			if v < 0 || v > 1 {
				t.Fatalf("idle gauge %v outside 0..1", v)
			}
		}
		return n, h
	}
	idle(scrape(t, addr))

	// Load: producers of large gzip batches keep the one handler busy
	// (the broker decompresses each batch to validate it).
	loadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Seed()), kgo.DefaultProduceTopic("load"),
				kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.ProducerLinger(5*time.Millisecond))
			if err != nil {
				return
			}
			defer cl.Close()
			v := []byte(strings.Repeat("moldau metrics under load ", 2000))
			for loadCtx.Err() == nil {
				rs := make([]*kgo.Record, 16)
				for j := range rs {
					rs[j] = &kgo.Record{Value: v}
				}
				cl.ProduceSync(loadCtx, rs...)
			}
		}()
	}
	var minHandlerIdle = 1.0
	eventually(t, 30*time.Second, func() error {
		_, h := idle(scrape(t, addr))
		if h < minHandlerIdle {
			minHandlerIdle = h
		}
		if minHandlerIdle > 0.7 {
			return fmt.Errorf("handler idle gauge still %.3f under load", minHandlerIdle)
		}
		return nil
	})
	stop()
	wg.Wait()

	m := scrape(t, addr)
	for _, name := range []string{
		`kafka_network_requestmetrics_requests_total{request="Produce"`,
		`kafka_server_brokertopicmetrics_bytesin_total{topic="load"}`,
		`kafka_server_brokertopicmetrics_messagesin_total{topic="load"}`,
		`kafka_network_requestchannel_requestqueuesize`,
		`kafka_log_log_logendoffset{`,
		`go_goroutines`,
	} {
		found := false
		for k, v := range m {
			if strings.HasPrefix(k, name) && v >= 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("metric %s missing", name)
		}
	}
	if v, _ := metric(m, `kafka_server_brokertopicmetrics_messagesin_total{topic="load"}`); v == 0 {
		t.Errorf("messagesin for the loaded topic is 0")
	}
	// Kafka's ErrorsPerSec: every error code of every response, NONE
	// included; a Metadata request for a topic that is not there counts
	// UNKNOWN_TOPIC_OR_PARTITION.
	if v, _ := metric(m, `kafka_network_requestmetrics_errors_total{error="NONE",request="Produce"}`); v == 0 {
		t.Errorf("errors_total counts no NONE for Produce")
	}
	req := kmsg.NewPtrMetadataRequest()
	missing := kmsg.NewMetadataRequestTopic()
	missing.Topic = kmsg.StringPtr("not-there")
	req.Topics = append(req.Topics, missing)
	if _, err := req.RequestWith(ctx, newClient(t, b.Seed())); err != nil {
		t.Fatal(err)
	}
	if v, _ := metric(scrape(t, addr), `kafka_network_requestmetrics_errors_total{error="UNKNOWN_TOPIC_OR_PARTITION",request="Metadata"}`); v == 0 {
		t.Errorf("errors_total counts no UNKNOWN_TOPIC_OR_PARTITION for Metadata")
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/debug/pprof/: %v %v", err, resp)
	}
	if resp != nil {
		resp.Body.Close()
	}
}
