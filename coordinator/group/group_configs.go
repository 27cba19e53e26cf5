package group

import (
	"sync"
	"time"

	"github.com/moldau/moldau/broker/config"
)

// Group configs (KIP-848's GROUP config resource): per-group overrides of
// the broker's consumer-protocol session timeout and heartbeat interval,
// set with IncrementalAlterConfigs, kept in the cluster metadata and handed
// to the coordinator by the broker's metadata publisher
// (Service.UpdateGroupConfig, Kafka's GroupCoordinator.updateGroupConfig).
// A consumer-protocol member of the group gets them at its next heartbeat:
// the heartbeat interval in the response, the session timeout for its
// expiry (Kafka's GroupMetadataManager.consumerGroupSessionTimeoutMs and
// consumerGroupHeartbeatIntervalMs). Classic-protocol members keep the
// session timeout they joined with. A group's configs outlive the group
// (DeleteGroups leaves them, as in Kafka), and apply to a group created
// later with the same id.

// groupConfig is one group's overrides; zero is not set.
type groupConfig struct {
	sessionTimeout    time.Duration
	heartbeatInterval time.Duration
}

// groupConfigs is Kafka's GroupConfigManager: the group configs of the
// metadata, shared by every shard. Safe for concurrent use: the metadata
// publisher writes, shard goroutines read.
type groupConfigs struct {
	mu sync.RWMutex
	m  map[string]groupConfig
}

func (gc *groupConfigs) get(groupID string) groupConfig {
	gc.mu.RLock()
	defer gc.mu.RUnlock()
	return gc.m[groupID]
}

func (gc *groupConfigs) set(groupID string, c groupConfig) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if c == (groupConfig{}) {
		delete(gc.m, groupID)
		return
	}
	if gc.m == nil {
		gc.m = map[string]groupConfig{}
	}
	gc.m[groupID] = c
}

// parseGroupConfig reads a group's configs as the controller stored them;
// keys it does not know, or values that do not parse (the controller
// refuses both), are left out and returned for a warning.
func parseGroupConfig(configs map[string]string) (groupConfig, []string) {
	var c groupConfig
	var bad []string
	for k, v := range configs {
		var dst *time.Duration
		switch k {
		case config.GroupConsumerSessionTimeoutMs:
			dst = &c.sessionTimeout
		case config.GroupConsumerHeartbeatIntervalMs:
			dst = &c.heartbeatInterval
		default:
			bad = append(bad, k)
			continue
		}
		n, err := config.ParseGroupInt(k, v)
		if err != nil {
			bad = append(bad, k)
			continue
		}
		*dst = durationMs(n)
	}
	return c, bad
}

// UpdateGroupConfig installs the configs of a group from the metadata (nil
// or empty: the group has none, the broker's values apply). The group
// need not exist or be on this broker.
func (s *Service) UpdateGroupConfig(groupID string, configs map[string]string) {
	c, bad := parseGroupConfig(configs)
	if len(bad) > 0 {
		s.log.Warn("ignoring group configs the coordinator does not know", "group", groupID, "configs", bad)
	}
	s.groupConfigs.set(groupID, c)
}

// consumerSessionTimeout is the session timeout of the group's
// consumer-protocol members: the group's config, else the broker's.
func (s *Shard) consumerSessionTimeout(groupID string) time.Duration {
	if d := s.groupConfigs.get(groupID).sessionTimeout; d > 0 {
		return d
	}
	return s.cfg.ConsumerSessionTimeout
}

// consumerHeartbeatInterval is the heartbeat interval the group's
// consumer-protocol members are given: the group's config, else the
// broker's.
func (s *Shard) consumerHeartbeatInterval(groupID string) time.Duration {
	if d := s.groupConfigs.get(groupID).heartbeatInterval; d > 0 {
		return d
	}
	return s.cfg.ConsumerHeartbeatInterval
}
