package group

import (
	"slices"
	"sync/atomic"

	"github.com/moldau/moldau/coordinator/runtime"
)

// Regular expression subscriptions (Kafka 4, KIP-848): a member may
// subscribe with SubscribedTopicRegex; the coordinator resolves the
// expression against every topic's whole name (internal topics included,
// as Kafka does), records what it resolved to
// (ConsumerGroupRegularExpression) and bumps the group epoch when that
// changes. Resolution runs as its own operation on the shard's timer,
// after the heartbeat that asked for it, as Kafka runs it on an executor;
// it happens when a regex is new or unresolved, or topics were created
// since the last resolution, at most every regexRefreshInterval.

// metadataVersions is the coordinator's count of topic changes, which the
// shards read to know whether regexes need resolving again (Kafka uses the
// metadata image's offset).
type metadataVersions struct {
	version          atomic.Int64 // bumped by every topic change
	newTopicsVersion atomic.Int64 // version of the last change that created topics
}

// maybeUpdateRegularExpressions is Kafka's: it writes the tombstone of a
// regex no member subscribes to any more, bumps the epoch when a member
// moves to an already resolved regex, and schedules a resolution when one
// is needed.
func (s *Shard) maybeUpdateRegularExpressions(g *ConsumerGroup, m, updated *ConsumerGroupMember, records []runtime.Record, now int64) (bool, []runtime.Record, error) {
	oldRe, newRe := m.subscribedTopicRegex, updated.subscribedTopicRegex
	bump, requireRefresh := false, false
	if oldRe != newRe {
		if oldRe != "" && g.subscribedRegexes[oldRe] == 1 && g.hasMember(m.memberID) {
			records = append(records, consumerGroupRegexTombstone(g.groupID, oldRe))
		}
		if newRe != "" {
			if g.subscribedRegexes[newRe] == 0 {
				requireRefresh = true
			} else {
				_, bump = g.resolvedRegexes[newRe]
			}
		}
	}
	if !requireRefresh && len(g.subscribedRegexes) == 0 {
		return bump, records, nil
	}
	key := regexRefreshKey(g.groupID)
	if s.timer.IsScheduled(key) || now <= g.lastRegexRefreshMs+s.cfg.RegexRefreshInterval.Milliseconds() {
		return bump, records, nil
	}
	counts := make(map[string]int, len(g.subscribedRegexes)+1)
	for re, n := range g.subscribedRegexes {
		counts[re] = n
	}
	if oldRe != "" && g.hasMember(m.memberID) {
		inc(counts, oldRe, -1)
	}
	if newRe != "" {
		inc(counts, newRe, 1)
	}
	requireRefresh = requireRefresh || len(counts) != len(g.resolvedRegexes) || g.lastRegexVersion < s.versions.newTopicsVersion.Load()
	if requireRefresh && len(counts) > 0 {
		groupID := g.groupID
		s.timer.Schedule(key, 0, func() (voidResult, error) { return s.refreshRegularExpressions(groupID), nil })
	}
	return bump, records, nil
}

// refreshRegularExpressions resolves the group's regexes against the
// current topics (Kafka's refreshRegularExpressions and
// handleRegularExpressionsResult).
func (s *Shard) refreshRegularExpressions(groupID string) voidResult {
	g, ok := s.groups[groupID].(*ConsumerGroup)
	if !ok || len(g.subscribedRegexes) == 0 {
		return emptyResult
	}
	now := s.now().UnixMilli()
	version := s.versions.version.Load()
	topics := s.topics.Topics()
	names := make(map[string]int, len(g.subscribedTopicNames))
	for t, n := range g.subscribedTopicNames {
		names[t] = n
	}
	var records []runtime.Record
	bump := false
	for _, re := range sortedKeys(g.subscribedRegexes) {
		compiled, err := compileRegex(re)
		if err != nil {
			continue // validated when subscribed
		}
		matched := []string{}
		for _, t := range topics {
			if compiled.MatchString(t.Name) {
				matched = append(matched, t.Name)
			}
		}
		slices.Sort(matched)
		old := g.resolvedRegexes[re]
		if _, had := g.resolvedRegexes[re]; !had || !slices.Equal(old.topics, matched) {
			bump = true
			for _, t := range old.topics {
				inc(names, t, -1)
			}
			for _, t := range matched {
				inc(names, t, 1)
			}
		}
		records = append(records, consumerGroupRegexRecord(groupID, re, &consumerGroupRegularExpressionValue{Topics: matched, Version: version, Timestamp: now}))
	}
	md := computeSubscriptionMetadata(names, s.topics)
	if !equalSubscriptionMetadata(md, g.subscriptionMetadata) {
		bump = true
		records = append(records, subscriptionMetadataRecord(groupID, md))
	}
	if bump {
		epoch := g.groupEpoch + 1
		records = append(records, consumerGroupEpochRecord(groupID, epoch))
		s.log.Info("bumped group epoch after resolving regular expressions", "group", groupID, "epoch", epoch)
		s.metrics.consumerRebalance()
		g.setMetadataRefreshDeadline(now+metadataRefreshInterval.Milliseconds(), epoch)
	}
	return voidResult{Records: records}
}
