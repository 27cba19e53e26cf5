package network

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

func gather(t testing.TB, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.MetricFamily)
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func gaugeValue(t testing.TB, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mf := gather(t, reg)[name]
	if mf == nil || len(mf.Metric) != 1 {
		t.Fatalf("no gauge %s", name)
	}
	return mf.Metric[0].GetGauge().GetValue()
}

func labels(m *dto.Metric) map[string]string {
	out := make(map[string]string)
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestMetrics(t *testing.T) {
	reg := newRegistry()
	m := NewMetrics(reg)
	NewMetrics(reg) // a second one on the same registry shares the collectors
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) { c.Metrics = m })
	c := dial(t, s.addr)
	for i := range int32(7) {
		if err := roundTrip(c, i); err != nil {
			t.Fatal(err)
		}
	}
	c.Write(echoRequest(1, "x", nil))
	readFrame(t, c)
	m.RecordErrors(0, 6, 2) // NOT_LEADER_OR_FOLLOWER in two Produce partitions

	// Requests are counted once their response is written, which may be
	// just after the client read it.
	var mfs map[string]*dto.MetricFamily
	found := map[string]float64{}
	for deadline := time.Now().Add(5 * time.Second); ; {
		mfs = gather(t, reg)
		for _, mm := range mfs["kafka_network_requestmetrics_requests_total"].GetMetric() {
			l := labels(mm)
			found[l["request"]+"/"+l["version"]] = mm.GetCounter().GetValue()
		}
		if found["ApiVersions/3"] == 7 && found["Metadata/1"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests_total: %v", found)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, name := range []string{
		"kafka_network_socketserver_networkprocessoravgidlepercent",
		"kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent",
		"kafka_network_requestmetrics_requests_total",
		"kafka_network_requestmetrics_errors_total",
		"kafka_network_requestmetrics_totaltimems",
		"kafka_network_requestmetrics_requestqueuetimems",
		"kafka_network_requestmetrics_localtimems",
		"kafka_network_requestmetrics_remotetimems",
		"kafka_network_requestmetrics_responsequeuetimems",
		"kafka_network_requestmetrics_responsesendtimems",
		"kafka_network_requestchannel_requestqueuesize",
		"kafka_server_socketservermetrics_connection_count",
		"kafka_server_socketservermetrics_connection_creation_total",
		"go_goroutines",
		"process_cpu_seconds_total",
	} {
		if mfs[name] == nil {
			t.Errorf("missing %s", name)
		}
	}
	for _, mm := range mfs["kafka_network_requestmetrics_errors_total"].GetMetric() {
		if l := labels(mm); l["request"] != "Produce" || l["error"] != "NOT_LEADER_OR_FOLLOWER" || mm.GetCounter().GetValue() != 2 {
			t.Errorf("errors_total %v = %v, want Produce NOT_LEADER_OR_FOLLOWER 2", l, mm.GetCounter().GetValue())
		}
	}
	for _, mm := range mfs["kafka_network_requestmetrics_totaltimems"].Metric {
		if labels(mm)["request"] == "ApiVersions" && mm.GetSummary().GetSampleCount() != 7 {
			t.Fatalf("totaltimems count %d", mm.GetSummary().GetSampleCount())
		}
	}
	cc := mfs["kafka_server_socketservermetrics_connection_count"].Metric
	if len(cc) != 1 || labels(cc[0])["listener"] != "PLAINTEXT" || cc[0].GetGauge().GetValue() != 1 {
		t.Fatalf("connection_count: %v", cc)
	}
	c.Close()
	waitConnections(t, s.SocketServer, 0)
	if v := gather(t, reg)["kafka_server_socketservermetrics_connection_count"].Metric[0].GetGauge().GetValue(); v != 0 {
		t.Fatalf("connection_count after close: %v", v)
	}
}
