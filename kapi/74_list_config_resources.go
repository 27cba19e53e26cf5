package kapi

// ListConfigResources, versions 0 and 1 (KIP-1000 as
// ListClientMetricsResources; renamed and widened by KIP-1142, Kafka 4.1).
//
//   - v0: lists the client-metrics resources (KIP-714 subscriptions).
//     Moldau has none (client telemetry is not served), so the list is
//     empty.
//   - v1: resource_types: TOPIC (2), BROKER (4), BROKER_LOGGER (8),
//     CLIENT_METRICS (16), GROUP (32); an empty list means all of them. A
//     type outside these fails the whole request with
//     UNSUPPORTED_VERSION and no resources, as Kafka's
//     KafkaApis.handleListConfigResources.
//
// As Kafka, from this broker's metadata and in Kafka's order: groups that
// have configs, client-metrics resources (none), then every registered
// broker with an endpoint on the request's listener, by id, once as a
// BROKER_LOGGER and once as a BROKER, then every topic, by name (Kafka's
// order within a type is its hash maps'; sorted here).

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

// Kafka's ConfigResource.Type ids that ListConfigResources lists.
const (
	configResourceTopic         int8 = 2
	configResourceBroker        int8 = 4
	configResourceBrokerLogger  int8 = 8
	configResourceClientMetrics int8 = 16
	configResourceGroup         int8 = 32
)

func (h *Handler) handleListConfigResources(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	supported := []int8{configResourceClientMetrics}
	if req.Version >= 1 {
		supported = []int8{configResourceTopic, configResourceBroker, configResourceBrokerLogger, configResourceClientMetrics, configResourceGroup}
	}
	types := req.ResourceTypes
	if len(types) == 0 {
		types = supported
	}
	for _, t := range types {
		if !slices.Contains(supported, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
	}
	want := func(t int8) bool { return slices.Contains(types, t) }
	add := func(t int8, name string) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = name, t
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	im := h.image()
	if want(configResourceGroup) {
		var groups []string
		for r := range im.Configs {
			if r.Type == metadata.GroupResource {
				groups = append(groups, r.Name)
			}
		}
		slices.Sort(groups)
		for _, g := range groups {
			add(configResourceGroup, g)
		}
	}
	var brokers []string
	for _, b := range im.SortedBrokers() {
		if _, ok := b.Endpoint(rc.Listener); ok {
			brokers = append(brokers, strconv.Itoa(int(b.ID)))
		}
	}
	for _, t := range []int8{configResourceBrokerLogger, configResourceBroker} {
		if want(t) {
			for _, b := range brokers {
				add(t, b)
			}
		}
	}
	if want(configResourceTopic) {
		for _, t := range im.Topics() {
			add(configResourceTopic, t.Name)
		}
	}
	return resp
}
