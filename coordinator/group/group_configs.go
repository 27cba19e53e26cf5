package group

import (
	"sync"
	"time"

	"github.com/moldau/moldau/broker/config"
)

// Group configs (KIP-848's GROUP config resource): per-group overrides of
// the broker's consumer-protocol session timeout and heartbeat interval
// (and of share groups': theirs, the record lock duration, the
// auto-offset-reset strategy and the isolation level, KIP-932),
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
	// share groups
	shareSessionTimeout    time.Duration
	shareHeartbeatInterval time.Duration
	shareLockDuration      time.Duration
	shareAutoOffsetReset   string
	shareIsolationLevel    string
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
		var str *string
		switch k {
		case config.GroupConsumerSessionTimeoutMs:
			dst = &c.sessionTimeout
		case config.GroupConsumerHeartbeatIntervalMs:
			dst = &c.heartbeatInterval
		case config.GroupShareSessionTimeoutMs:
			dst = &c.shareSessionTimeout
		case config.GroupShareHeartbeatIntervalMs:
			dst = &c.shareHeartbeatInterval
		case config.GroupShareRecordLockDurationMs:
			dst = &c.shareLockDuration
		case config.GroupShareAutoOffsetReset:
			str = &c.shareAutoOffsetReset
		case config.GroupShareIsolationLevel:
			str = &c.shareIsolationLevel
		default:
			bad = append(bad, k)
			continue
		}
		if str != nil {
			sv, err := config.ParseGroupString(k, v)
			if err != nil {
				bad = append(bad, k)
				continue
			}
			*str = sv
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

// shareSessionTimeout is the session timeout of the share group's members:
// the group's share.session.timeout.ms, else the broker's.
func (s *Shard) shareSessionTimeout(groupID string) time.Duration {
	if d := s.groupConfigs.get(groupID).shareSessionTimeout; d > 0 {
		return d
	}
	return s.cfg.ShareSessionTimeout
}

// shareHeartbeatInterval is the heartbeat interval the share group's
// members are given: the group's share.heartbeat.interval.ms, else the
// broker's.
func (s *Shard) shareHeartbeatInterval(groupID string) time.Duration {
	if d := s.groupConfigs.get(groupID).shareHeartbeatInterval; d > 0 {
		return d
	}
	return s.cfg.ShareHeartbeatInterval
}

// ShareGroupConfig is what the share-partition side needs of a share
// group's configs, the group's overrides applied over the broker's.
type ShareGroupConfig struct {
	// AutoOffsetReset is share.auto.offset.reset: "latest" (the
	// default), "earliest" or "by_duration" (then ByDuration).
	AutoOffsetReset config.ShareAutoOffsetReset
	// RecordLockDuration is share.record.lock.duration.ms, else the
	// broker's group.share.record.lock.duration.ms.
	RecordLockDuration time.Duration
	// IsolationLevel is share.isolation.level: "read_uncommitted" (the
	// default) or "read_committed".
	IsolationLevel string
	// DeliveryCountLimit is the broker's group.share.delivery.count.limit
	// (Kafka 4.2 has no group config for it).
	DeliveryCountLimit int
}

// ShareGroupConfig returns the effective configs of a share group (the
// group need not exist). Safe for concurrent use.
func (s *Service) ShareGroupConfig(groupID string) ShareGroupConfig {
	gc := s.groupConfigs.get(groupID)
	out := ShareGroupConfig{
		AutoOffsetReset:    config.ShareAutoOffsetReset{Type: "latest"},
		RecordLockDuration: s.cfg.ShareRecordLockDuration,
		IsolationLevel:     "read_uncommitted",
		DeliveryCountLimit: s.cfg.ShareDeliveryCountLimit,
	}
	if gc.shareLockDuration > 0 {
		out.RecordLockDuration = gc.shareLockDuration
	}
	if r, ok := config.ParseShareAutoOffsetReset(gc.shareAutoOffsetReset); ok {
		out.AutoOffsetReset = r
	}
	if gc.shareIsolationLevel != "" {
		out.IsolationLevel = gc.shareIsolationLevel
	}
	return out
}
