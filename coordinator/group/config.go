package group

import (
	"crypto/rand"
	"fmt"
	"time"
)

// Config is the group coordinator's configuration (Kafka's
// GroupCoordinatorConfig); broker/config reads the keys named below.
type Config struct {
	// Classic protocol.
	ClassicInitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms, 3000
	ClassicMinSessionTimeout     time.Duration // group.min.session.timeout.ms, 6000
	ClassicMaxSessionTimeout     time.Duration // group.max.session.timeout.ms, 1800000
	ClassicMaxSize               int           // group.max.size, MaxInt32
	// ClassicNewMemberJoinTimeout bounds how long a new member's JoinGroup
	// may be parked (Kafka's internal 5 minutes).
	ClassicNewMemberJoinTimeout time.Duration

	// Consumer protocol (KIP-848).
	ConsumerSessionTimeout       time.Duration // group.consumer.session.timeout.ms, 45000
	ConsumerMinSessionTimeout    time.Duration // group.consumer.min.session.timeout.ms, 45000
	ConsumerMaxSessionTimeout    time.Duration // group.consumer.max.session.timeout.ms, 60000
	ConsumerHeartbeatInterval    time.Duration // group.consumer.heartbeat.interval.ms, 5000
	ConsumerMinHeartbeatInterval time.Duration // group.consumer.min.heartbeat.interval.ms, 5000
	ConsumerMaxHeartbeatInterval time.Duration // group.consumer.max.heartbeat.interval.ms, 15000
	ConsumerMaxSize              int           // group.consumer.max.size, MaxInt32
	ConsumerAssignors            []string      // group.consumer.assignors, uniform,range (the first is the default)
	// ConsumerMigrationPolicy is group.consumer.migration.policy:
	// bidirectional (Kafka 4's default), upgrade, downgrade or disabled.
	ConsumerMigrationPolicy string
	// RebalanceProtocols is group.coordinator.rebalance.protocols:
	// classic,consumer by default in Kafka 4.
	RebalanceProtocols []string
	// RegexRefreshInterval is how often a group's regular expressions are
	// resolved again against the topics (Kafka's 10s).
	RegexRefreshInterval time.Duration

	// Share groups (KIP-932).
	ShareSessionTimeout       time.Duration // group.share.session.timeout.ms, 45000
	ShareMinSessionTimeout    time.Duration // group.share.min.session.timeout.ms, 45000
	ShareMaxSessionTimeout    time.Duration // group.share.max.session.timeout.ms, 60000
	ShareHeartbeatInterval    time.Duration // group.share.heartbeat.interval.ms, 5000
	ShareMinHeartbeatInterval time.Duration // group.share.min.heartbeat.interval.ms, 5000
	ShareMaxHeartbeatInterval time.Duration // group.share.max.heartbeat.interval.ms, 15000
	ShareMaxSize              int           // group.share.max.size, 200
	ShareRecordLockDuration   time.Duration // group.share.record.lock.duration.ms, 30000
	ShareDeliveryCountLimit   int           // group.share.delivery.count.limit, 5
	// ShareInitializeRetryInterval is how long an initialization of
	// share-group state may stay unanswered before a heartbeat asks again
	// (Kafka's internal group.share.initialize.retry.interval.ms, 30000,
	// at least offsets.commit.timeout.ms).
	ShareInitializeRetryInterval time.Duration

	// Offsets.
	OffsetsRetention              time.Duration // offsets.retention.minutes, 7 days
	OffsetsRetentionCheckInterval time.Duration // offsets.retention.check.interval.ms, 600000
	OffsetMetadataMaxSize         int           // offset.metadata.max.bytes, 4096
	OffsetCommitTimeout           time.Duration // offsets.commit.timeout.ms, 5000
}

// DefaultConfig is Kafka 4's defaults.
func DefaultConfig() Config {
	return Config{
		ClassicInitialRebalanceDelay:  3 * time.Second,
		ClassicMinSessionTimeout:      6 * time.Second,
		ClassicMaxSessionTimeout:      30 * time.Minute,
		ClassicMaxSize:                1<<31 - 1,
		ClassicNewMemberJoinTimeout:   5 * time.Minute,
		ConsumerSessionTimeout:        45 * time.Second,
		ConsumerMinSessionTimeout:     45 * time.Second,
		ConsumerMaxSessionTimeout:     60 * time.Second,
		ConsumerHeartbeatInterval:     5 * time.Second,
		ConsumerMinHeartbeatInterval:  5 * time.Second,
		ConsumerMaxHeartbeatInterval:  15 * time.Second,
		ConsumerMaxSize:               1<<31 - 1,
		ConsumerAssignors:             []string{"uniform", "range"},
		ConsumerMigrationPolicy:       "bidirectional",
		ShareSessionTimeout:           45 * time.Second,
		ShareMinSessionTimeout:        45 * time.Second,
		ShareMaxSessionTimeout:        60 * time.Second,
		ShareHeartbeatInterval:        5 * time.Second,
		ShareMinHeartbeatInterval:     5 * time.Second,
		ShareMaxHeartbeatInterval:     15 * time.Second,
		ShareMaxSize:                  200,
		ShareRecordLockDuration:       30 * time.Second,
		ShareDeliveryCountLimit:       5,
		ShareInitializeRetryInterval:  30 * time.Second,
		RebalanceProtocols:            []string{"classic", "consumer"},
		RegexRefreshInterval:          10 * time.Second,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		OffsetMetadataMaxSize:         4096,
		OffsetCommitTimeout:           5 * time.Second,
	}
}

func (c *Config) withDefaults() {
	d := DefaultConfig()
	if c.ClassicNewMemberJoinTimeout <= 0 {
		c.ClassicNewMemberJoinTimeout = d.ClassicNewMemberJoinTimeout
	}
	if c.ClassicMaxSize <= 0 {
		c.ClassicMaxSize = d.ClassicMaxSize
	}
	if c.ConsumerMaxSize <= 0 {
		c.ConsumerMaxSize = d.ConsumerMaxSize
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = d.ConsumerAssignors
	}
	if c.ConsumerMigrationPolicy == "" {
		c.ConsumerMigrationPolicy = d.ConsumerMigrationPolicy
	}
	if c.RebalanceProtocols == nil {
		c.RebalanceProtocols = d.RebalanceProtocols
	}
	if c.RegexRefreshInterval <= 0 {
		c.RegexRefreshInterval = d.RegexRefreshInterval
	}
	if c.OffsetsRetentionCheckInterval <= 0 {
		c.OffsetsRetentionCheckInterval = d.OffsetsRetentionCheckInterval
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = d.OffsetsRetention
	}
	if c.OffsetCommitTimeout <= 0 {
		c.OffsetCommitTimeout = d.OffsetCommitTimeout
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = d.ConsumerSessionTimeout
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = d.ConsumerHeartbeatInterval
	}
	if c.ShareSessionTimeout <= 0 {
		c.ShareSessionTimeout = d.ShareSessionTimeout
	}
	if c.ShareHeartbeatInterval <= 0 {
		c.ShareHeartbeatInterval = d.ShareHeartbeatInterval
	}
	if c.ShareMaxSize <= 0 {
		c.ShareMaxSize = d.ShareMaxSize
	}
	if c.ShareRecordLockDuration <= 0 {
		c.ShareRecordLockDuration = d.ShareRecordLockDuration
	}
	if c.ShareDeliveryCountLimit <= 0 {
		c.ShareDeliveryCountLimit = d.ShareDeliveryCountLimit
	}
	if c.ShareInitializeRetryInterval <= 0 {
		c.ShareInitializeRetryInterval = d.ShareInitializeRetryInterval
	}
	c.ShareInitializeRetryInterval = max(c.ShareInitializeRetryInterval, c.OffsetCommitTimeout)
}

// consumerProtocolEnabled reports whether KIP-848's protocol is enabled.
func (c *Config) consumerProtocolEnabled() bool {
	for _, p := range c.RebalanceProtocols {
		if p == "consumer" {
			return true
		}
	}
	return false
}

// classicProtocolEnabled reports whether the classic protocol is enabled.
func (c *Config) classicProtocolEnabled() bool {
	for _, p := range c.RebalanceProtocols {
		if p == "classic" {
			return true
		}
	}
	return false
}

// randomUUIDString is Java's UUID.randomUUID().toString(): a version-4
// UUID as 36 hexadecimal characters and dashes.
func randomUUIDString() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func durationMs(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// Validate checks the relations between keys that Kafka's
// GroupCoordinatorConfig requires at start-up.
func (c *Config) Validate() error {
	switch {
	case c.ClassicMinSessionTimeout > c.ClassicMaxSessionTimeout:
		return fmt.Errorf("group.min.session.timeout.ms (%v) must not be above group.max.session.timeout.ms (%v)", c.ClassicMinSessionTimeout, c.ClassicMaxSessionTimeout)
	case c.ConsumerSessionTimeout < c.ConsumerMinSessionTimeout || c.ConsumerSessionTimeout > c.ConsumerMaxSessionTimeout:
		return fmt.Errorf("group.consumer.session.timeout.ms (%v) must be within group.consumer.min.session.timeout.ms (%v) and group.consumer.max.session.timeout.ms (%v)", c.ConsumerSessionTimeout, c.ConsumerMinSessionTimeout, c.ConsumerMaxSessionTimeout)
	case c.ConsumerHeartbeatInterval < c.ConsumerMinHeartbeatInterval || c.ConsumerHeartbeatInterval > c.ConsumerMaxHeartbeatInterval:
		return fmt.Errorf("group.consumer.heartbeat.interval.ms (%v) must be within group.consumer.min.heartbeat.interval.ms (%v) and group.consumer.max.heartbeat.interval.ms (%v)", c.ConsumerHeartbeatInterval, c.ConsumerMinHeartbeatInterval, c.ConsumerMaxHeartbeatInterval)
	case c.ConsumerHeartbeatInterval >= c.ConsumerSessionTimeout:
		return fmt.Errorf("group.consumer.heartbeat.interval.ms (%v) must be below group.consumer.session.timeout.ms (%v)", c.ConsumerHeartbeatInterval, c.ConsumerSessionTimeout)
	case c.ShareSessionTimeout < c.ShareMinSessionTimeout || c.ShareSessionTimeout > c.ShareMaxSessionTimeout:
		return fmt.Errorf("group.share.session.timeout.ms (%v) must be within group.share.min.session.timeout.ms (%v) and group.share.max.session.timeout.ms (%v)", c.ShareSessionTimeout, c.ShareMinSessionTimeout, c.ShareMaxSessionTimeout)
	case c.ShareHeartbeatInterval < c.ShareMinHeartbeatInterval || c.ShareHeartbeatInterval > c.ShareMaxHeartbeatInterval:
		return fmt.Errorf("group.share.heartbeat.interval.ms (%v) must be within group.share.min.heartbeat.interval.ms (%v) and group.share.max.heartbeat.interval.ms (%v)", c.ShareHeartbeatInterval, c.ShareMinHeartbeatInterval, c.ShareMaxHeartbeatInterval)
	case c.ShareHeartbeatInterval >= c.ShareSessionTimeout:
		return fmt.Errorf("group.share.heartbeat.interval.ms (%v) must be below group.share.session.timeout.ms (%v)", c.ShareHeartbeatInterval, c.ShareSessionTimeout)
	case !c.classicProtocolEnabled():
		return fmt.Errorf("group.coordinator.rebalance.protocols must contain classic")
	}
	return nil
}
