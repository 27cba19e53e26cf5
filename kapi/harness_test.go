package kapi

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/broker/controller/controllertest"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/replica"
)

// newAdminHandler builds a Handler over a real controller and metadata
// loader on an in-memory quorum, with this node (1) registered and
// unfenced; admin requests take the same path as on a single-node broker
// (forwarded in-process to the active controller).
func newAdminHandler(t *testing.T, overrides ...string) *Handler {
	t.Helper()
	dir := t.TempDir()
	cfg, _, err := config.Load("", append([]string{"log.dirs=" + dir}, overrides...))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	q := controllertest.New(cfg.NodeID)
	ctrl := controller.New(controller.Config{NodeID: cfg.NodeID, ClusterID: "test-cluster", Broker: cfg, Raft: q, Logger: logger, MaxReplicationFactor: 1})
	ctrl.Start()
	loader := metadata.NewLoader(logger)
	if err := loader.InstallPublisher(testConfigPublisher{cfg}); err != nil {
		t.Fatal(err)
	}
	q.Register(ctrl)
	q.Register(loaderListener{loader})
	t.Cleanup(func() { ctrl.Close(); q.Close() })
	q.Elect(cfg.NodeID)
	ch := &localChannel{h: NewControllerHandler(cfg.NodeID, logger, ctrl, nil), leader: q.Leader}
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	replicas, err := replica.NewManager(replica.Config{NodeID: cfg.NodeID, Logs: logs, Image: loader.Image, Logger: logger,
		ConfigFor: func(t *metadata.Topic) log.Config { return cfg.LogConfig(t.Configs) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replicas.Close)
	if err := loader.InstallPublisher(replicas); err != nil {
		t.Fatal(err)
	}
	h := New(Config{
		NodeID:      cfg.NodeID,
		ClusterID:   "test-cluster",
		Logger:      logger,
		Broker:      cfg,
		Metadata:    loader,
		Controller:  ch,
		Replicas:    replicas,
		BrokerEpoch: func() int64 { return ch.epoch },
	})
	registerTestBroker(t, ch, cfg.NodeID, loader)
	return h
}

// registerTestBroker registers a broker with a PLAINTEXT endpoint and
// heartbeats until it is unfenced.
func registerTestBroker(t *testing.T, ch *localChannel, id int32, loader *metadata.Loader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = id, "test-cluster", uuid.Random()
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "localhost", 9092
	req.Listeners = append(req.Listeners, l)
	r, err := ch.Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ch.epoch = r.(*kmsg.BrokerRegistrationResponse).BrokerEpoch
	for {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, ch.epoch, loader.Image().Offset
		r, err := ch.Send(ctx, hb)
		if err != nil {
			t.Fatal(err)
		}
		if !r.(*kmsg.BrokerHeartbeatResponse).IsFenced {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := loader.WaitFor(ctx, func(im *metadata.Image) bool { b := im.Brokers[id]; return b != nil && !b.Fenced }); err != nil {
		t.Fatal(err)
	}
}

// localChannel sends controller requests in-process, retrying while the
// controller is not yet active.
type localChannel struct {
	h      *ControllerHandler
	leader func() int32
	epoch  int64
}

func (c *localChannel) ActiveController() int32 { return c.leader() }

func (c *localChannel) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	for {
		resp, err := c.h.Dispatch(ctx, req)
		if !controller.IsNotController(err) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

type loaderListener struct{ l *metadata.Loader }

func (a loaderListener) HandleCommit(b controller.Batch) {
	if err := a.l.HandleCommit(b.LastOffset, b.Epoch, b.Records); err != nil {
		panic(err)
	}
}
func (loaderListener) HandleLeaderChange(int32, int32) {}

type testConfigPublisher struct{ cfg *config.KafkaConfig }

func (testConfigPublisher) Name() string { return "test-config" }
func (p testConfigPublisher) OnMetadataUpdate(d *metadata.Delta, im *metadata.Image) {
	for _, r := range d.ChangedConfigs() {
		if r.Type == metadata.BrokerResource && (r.Name == "" || r.Name == strconv.Itoa(int(p.cfg.NodeID))) {
			p.cfg.SetDynamic(r.Name, im.BrokerConfigs(r.Name))
		}
	}
}

// createTopic creates a topic through CreateTopics, as a client would.
func (h *Handler) createTopic(name string, partitions int32, rf int16, assignment [][]int32, configs map[string]string, validateOnly bool) (*metadata.Topic, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.ValidateOnly, req.TimeoutMillis = 7, validateOnly, 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i, r := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp := h.handleCreateTopics(testRC(), req).(*kmsg.CreateTopicsResponse)
	st := resp.Topics[0]
	if st.ErrorCode != 0 {
		msg := ""
		if st.ErrorMessage != nil {
			msg = *st.ErrorMessage
		}
		return nil, apierr.New(kerr.ErrorForCode(st.ErrorCode).(*kerr.Error), msg)
	}
	if validateOnly {
		t := &metadata.Topic{Name: name}
		for i := range st.NumPartitions {
			t.Partitions = append(t.Partitions, metadata.Partition{Index: i})
		}
		return t, nil
	}
	t, _ := h.image().Topic(name)
	return t, nil
}
